-- Between checkpoints a revision keeps its change, the updates it applied, instead of its
-- text (memory_core::Retention::is_checkpoint): a large `add` is then its largest column, and
-- is compressed with lz4 as the texts are, where the server has it.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE memory_history ALTER COLUMN updates SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
    RAISE NOTICE 'updates stay compressed with pglz: %', SQLERRM;
END
$$;
