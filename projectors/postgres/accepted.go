package postgres

// accepted_resources (migration 0011) is the gateways' table of what they
// handed out in a 202 before this projector had it. The transaction that
// writes a VM's, job's or lease's own row deletes its accepted row, so
// that a gateway finds exactly one of the two: the first state until the
// resource is projected, its row from then on — and nothing once an
// expunged VM's row is gone.
const sqlAcceptedProjected = `
DELETE FROM accepted_resources a USING unnest($1::text[], $2::text[]) AS u(kind, id)
WHERE a.kind = u.kind AND a.id = u.id`

// projected lists, as kinds and ids of accepted_resources, the VMs, jobs
// and leases whose rows the batch writes or removes, and the VMs of
// rejected Deploys, which will never have a row. A power update alone
// writes no row (the VM may have none yet); a lease notification without
// a status neither.
func (c *changes) projected() (kinds, ids []string) {
	for _, id := range c.vmOrder {
		if op := c.vms[id].op; op == vmUpsert || op == vmDelete {
			kinds, ids = append(kinds, "vm"), append(ids, id)
		}
	}
	for _, id := range c.refusedVMs {
		kinds, ids = append(kinds, "vm"), append(ids, id)
	}
	for _, id := range c.jobIDs {
		kinds, ids = append(kinds, "job"), append(ids, id)
	}
	for _, id := range c.newIDs {
		kinds, ids = append(kinds, "job"), append(ids, id)
	}
	for _, s := range c.stmts {
		if s.sql == sqlLease {
			kinds, ids = append(kinds, "lease"), append(ids, s.args[0].(string))
		}
	}
	return kinds, ids
}
