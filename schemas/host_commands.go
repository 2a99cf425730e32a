package schemas

// HostCommand holds the fields of every admin command on host.commands.v1.
type HostCommand struct {
	CommandID string `avro:"command_id" doc:"Unique command id."`
	HostID    string `avro:"host_id" doc:"Host; also the record key."`
	Account   string `avro:"account" doc:"Admin account that asked."`
	IssuedAt  int64  `avro:"issued_at" doc:"Unix milliseconds."`
}

// EnableHost lets placement use a host again.
type EnableHost struct{ HostCommand }

// DisableHost keeps placement off a host; its VMs keep running.
type DisableHost struct{ HostCommand }

// PrepareForMaintenance migrates every VM off a host, then puts it in Maintenance.
type PrepareForMaintenance struct{ HostCommand }

// CancelMaintenance returns a host in (or preparing for) maintenance to Enabled.
type CancelMaintenance struct{ HostCommand }

// RemoveHost forgets a host; its agent is refused from then on.
type RemoveHost struct{ HostCommand }
