-- memory_lost: how a write of several documents (a note and its scope's index) stays one atomic
-- step in a single statement, without a transaction around it (two round trips more). Its
-- rows land only where no other writer changed them first; when some landed and another did
-- not, the statement calls this, and the error rolls back the rows that did land. The message
-- is the position (from 1) of the first write that did not land, so that the writer names the
-- document it lost on. A code of its own, which no other error has.
CREATE FUNCTION memory_lost(lost_at BIGINT) RETURNS BIGINT
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'ML001', MESSAGE = lost_at::TEXT;
END
$$;
