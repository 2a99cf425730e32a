package schemas

// PlacementDecided tells a VM which host placement chose for it.
type PlacementDecided struct {
	VmID      string   `avro:"vm_id" doc:"VM placed; also the record key."`
	RequestID string   `avro:"request_id" doc:"The PlaceVm request answered."`
	Epoch     int64    `avro:"epoch" doc:"VM epoch of the request."`
	ZoneID    string   `avro:"zone_id" doc:"Zone of the host."`
	PodID     string   `avro:"pod_id" doc:"Pod of the host."`
	ClusterID string   `avro:"cluster_id" doc:"Cluster of the host."`
	HostID    string   `avro:"host_id" doc:"Chosen host."`
	Planner   string   `avro:"planner" doc:"Planner that chose it."`
	Volumes   []Volume `avro:"volumes" doc:"The request's volumes with their pools (pool_id and pool_path) filled in."`
	Nics      []Nic    `avro:"nics" doc:"The request's NICs with their addresses (ip, mac, gateway, cidr) filled in."`
}

// PlacementFailed tells a VM that no host could take it.
type PlacementFailed struct {
	VmID      string `avro:"vm_id" doc:"VM; also the record key."`
	RequestID string `avro:"request_id" doc:"The PlaceVm request answered."`
	Epoch     int64  `avro:"epoch" doc:"VM epoch of the request."`
	Reason    string `avro:"reason" doc:"Why, e.g. InsufficientCapacity."`
	Detail    string `avro:"detail" doc:"Which filters removed how many hosts, for people."`
}

// HostDown tells a VM that its last host was fenced (definitely down).
type HostDown struct {
	VmID   string `avro:"vm_id" doc:"VM last seen on the host; also the record key."`
	HostID string `avro:"host_id" doc:"The host that is down."`
	Reason string `avro:"reason" doc:"How the host was found down."`
	At     int64  `avro:"at" doc:"Unix milliseconds."`
}

// VmMissingFromHost tells a VM that its host stopped listing it for longer
// than power.report.missing.grace.
type VmMissingFromHost struct {
	VmID       string `avro:"vm_id" doc:"VM; also the record key."`
	HostID     string `avro:"host_id" doc:"Host whose reports no longer list the VM."`
	LastSeenAt int64  `avro:"last_seen_at" doc:"When the host last listed the VM, Unix milliseconds."`
	ReportSeq  int64  `avro:"report_seq" doc:"Report sequence of the host report that missed it."`
}
