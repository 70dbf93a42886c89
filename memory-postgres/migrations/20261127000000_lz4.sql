-- The documents' text and each revision's text are compressed with lz4 rather than pglz, the
-- default, where the server has it (PostgreSQL 14 and later, built with lz4, as the Debian and
-- Docker builds are): a write compresses the text twice (the document and its revision), and
-- lz4 does that several times faster. Rows written before keep their pglz values, which read
-- as before. A server without lz4 keeps pglz: this is a speed-up, not a requirement.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE memory_documents ALTER COLUMN content SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE memory_history ALTER COLUMN content SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
    RAISE NOTICE 'content stays compressed with pglz: %', SQLERRM;
END
$$;
