-- The projector's one-round-trip transaction moves its offsets in one
-- statement: BEGIN, this call, the writes and COMMIT go together. The
-- UPDATE locks the offset rows first (as the two-round-trip path's
-- SELECT … FOR UPDATE does) and moves each only from the offset the
-- projector expects; when a row is missing or elsewhere (another instance
-- committed during a rebalance, a rebuild swapped the tables) fewer rows
-- change, and the call fails the transaction with SQLSTATE VP001: the
-- projector rolls back and takes the path that reads the offsets first.
-- It replaces vmplane_expect_offsets, which checked the rows and left the
-- move to a second statement.
CREATE FUNCTION vmplane_advance_offsets(g text, topics text[], parts integer[], expected bigint[], nexts bigint[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    moved integer;
BEGIN
    UPDATE consumer_offsets c SET next_offset = w.next
    FROM unnest(topics, parts, expected, nexts) AS w(topic, part, expected, next)
    WHERE c."group" = g AND c.topic = w.topic AND c."partition" = w.part AND c.next_offset = w.expected;
    GET DIAGNOSTICS moved = ROW_COUNT;
    IF moved <> cardinality(topics) THEN
        RAISE EXCEPTION 'consumer offsets of group % moved', g USING ERRCODE = 'VP001';
    END IF;
END $$;

DROP FUNCTION vmplane_expect_offsets(text, text[], integer[], bigint[]);
