-- What a gateway handed out in a 202 before the projector has it (issue
-- 28): the VM a Deploy will make, the job a command will become, the lease
-- a CreateLease will make, each with its owning account and its first
-- state as the gateway reads it (body: the gateway's JSON of the read
-- model's row, kept as bytes like idempotency_keys.body, since jsonb
-- refuses the \u0000 a string of a request may hold). A gateway writes
-- the row before it writes the command to the log, and every gateway
-- falls back to it when the projected row is missing, so that a client
-- can act at once on the id it was given.
--
-- The projector deletes a row in the transaction that writes the
-- resource's own row (vms, jobs, leases): from then on that row answers,
-- and a VM expunged later is not brought back by its first state. A row
-- whose command never reached the log (its gateway died, or the log
-- refused it) names an id nobody was given; the gateways sweep rows older
-- than a day.

CREATE TABLE accepted_resources (
    kind        text NOT NULL, -- vm, job, lease
    id          text NOT NULL,
    account     text NOT NULL,
    body        bytea NOT NULL,
    accepted_at timestamptz NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE INDEX accepted_resources_accepted_at ON accepted_resources (accepted_at);
