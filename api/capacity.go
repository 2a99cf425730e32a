package api

// ZoneCapacity is GET /v1/zones/{id}/capacity: per cluster and in total,
// capacity with over-commit, used (allocated), and free on reservable hosts.
type ZoneCapacity struct {
	ZoneID   string            `json:"zone_id"`
	Total    ClusterCapacity   `json:"total"`
	Clusters []ClusterCapacity `json:"clusters"`
	// Pools are the zone's primary storage pools.
	Pools []Pool `json:"pools"`
}

// ClusterCapacity is one cluster's line of ZoneCapacity.
type ClusterCapacity struct {
	PodID           string `json:"pod_id,omitempty"`
	ClusterID       string `json:"cluster_id,omitempty"`
	Hosts           int    `json:"hosts"`
	ReservableHosts int    `json:"reservable_hosts"`
	ReservedHosts   int    `json:"reserved_hosts"`
	DedicatedHosts  int    `json:"dedicated_hosts"`
	CPU             int64  `json:"cpu"`
	UsedCPU         int64  `json:"used_cpu"`
	FreeCPU         int64  `json:"free_cpu"`
	MemoryMB        int64  `json:"memory_mb"`
	UsedMemoryMB    int64  `json:"used_memory_mb"`
	FreeMemoryMB    int64  `json:"free_memory_mb"`
}
