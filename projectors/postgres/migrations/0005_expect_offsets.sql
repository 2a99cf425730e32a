-- The projector's one-round-trip transaction: when it knows its partitions'
-- offsets (its own last commit), it sends BEGIN, this check, the writes and
-- COMMIT together. The check locks the offset rows (as the two-round-trip
-- path does) and fails the transaction with SQLSTATE VP001 when a row is not
-- what the projector expects (another instance committed during a
-- rebalance, a rebuild swapped the tables); the projector then rolls back
-- and takes the path that reads the offsets first.
CREATE FUNCTION vmplane_expect_offsets(g text, topics text[], parts integer[], nexts bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT FROM unnest(topics, parts, nexts) AS w(topic, part, next)
        LEFT JOIN (
            SELECT c.topic, c."partition", c.next_offset FROM consumer_offsets c
            WHERE c."group" = g AND (c.topic, c."partition") IN (SELECT * FROM unnest(topics, parts))
            FOR UPDATE
        ) c ON c.topic = w.topic AND c."partition" = w.part
        WHERE c.next_offset IS DISTINCT FROM w.next)
    THEN
        RAISE EXCEPTION 'consumer offsets of group % moved', g USING ERRCODE = 'VP001';
    END IF;
END $$;
