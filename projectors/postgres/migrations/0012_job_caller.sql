-- Who asked for a job and how it ended, for an audit (issue 29): the
-- account, API key and request id of the job's command (schemas.Caller),
-- written from the command and from the job's JobAccepted or JobRejected
-- (what vmplane starts itself names account 'system'), and the error
-- code of its end beside reason and detail (schemas/job_codes.go: the
-- reason of a failure or rejection, Cancelled for a cancelled job).
-- Jobs projected before this migration keep empty strings: their records
-- carry no caller, and a rebuild fills error_code from their reasons.
--
-- No index on caller_key_id: every job row is written several times, and
-- each write of a row whose indexed columns change (state does) adds an
-- entry to every index. /v1/jobs?key= reads the jobs of the key's
-- account by the account index when a user asks, and walks jobs in id
-- order until the page is full when an admin does; the journal in
-- ClickHouse answers an audit across accounts (docs/analytics.md).

ALTER TABLE jobs
    ADD COLUMN caller_account    text NOT NULL DEFAULT '',
    ADD COLUMN caller_key_id     text NOT NULL DEFAULT '',
    ADD COLUMN caller_request_id text NOT NULL DEFAULT '',
    ADD COLUMN error_code        text NOT NULL DEFAULT '';
