package schemas

// Guest networks and the NICs of VMs.
//
// A network is a zone's resource: placement keeps it in the zone's ledger
// (ZoneRecord.Networks) and gives each VM's NIC an address of it in the
// decision that places the VM, one zone at a time, so no address is given
// twice. The address stays with the VM through stops and migrations and is
// released when the VM is expunged.

// UpdateNetwork creates or deletes a guest network (placement.requests.v1,
// key: zone id).
type UpdateNetwork struct {
	RequestID string `avro:"request_id" doc:"Unique request id."`
	NetworkID string `avro:"network_id" doc:"Network id."`
	ZoneID    string `avro:"zone_id" doc:"Zone; also the record key."`
	Name      string `avro:"name" doc:"Network name."`
	Cidr      string `avro:"cidr" doc:"IPv4 CIDR of the network, e.g. 10.1.0.0/24."`
	Gateway   string `avro:"gateway" doc:"Gateway address, inside the CIDR; never given to a NIC."`
	Default   bool   `avro:"default" doc:"The zone's default network: a deploy that names none gets a NIC on it."`
	Deleted   bool   `avro:"deleted" doc:"Remove the network; refused while NICs are on it."`
	At        int64  `avro:"at" doc:"Unix milliseconds."`
	Caller    Caller `avro:"caller" doc:"Who asked: account, API key and request id (the gateway's request); account system for what vmplane writes itself."`
}

// NetworkChanged is a network as placement holds it after a change of the
// network or of its addresses (placement.events.v1, key: zone id).
type NetworkChanged struct {
	Network NetworkState `avro:"network" doc:"The network."`
	Deleted bool         `avro:"deleted" doc:"The network was removed."`
	Refused string       `avro:"refused" doc:"Why the UpdateNetwork was refused (the network is then as before); empty when applied."`
	At      int64        `avro:"at" doc:"Unix milliseconds."`
}

// NetworkState is a network in the placement ledger.
type NetworkState struct {
	NetworkID string `avro:"network_id" doc:"Network id."`
	ZoneID    string `avro:"zone_id" doc:"Zone."`
	Name      string `avro:"name" doc:"Network name."`
	Cidr      string `avro:"cidr" doc:"IPv4 CIDR."`
	Gateway   string `avro:"gateway" doc:"Gateway address."`
	Default   bool   `avro:"default" doc:"The zone's default network."`
	Size      int32  `avro:"size" doc:"Addresses a NIC can get: the CIDR less network, broadcast and gateway."`
	Allocated int32  `avro:"allocated" doc:"Addresses held by NICs."`
	NextIP    int32  `avro:"next_ip" doc:"Offset in the CIDR where the next search for a free address starts."`
}

// Nic is a VM's network interface: in the VM's record, in StartVm and
// MigrateVm, and in placement's requests (network_id only) and decisions.
type Nic struct {
	NicID     string `avro:"nic_id" doc:"NIC id."`
	NetworkID string `avro:"network_id" doc:"Network."`
	DeviceID  int32  `avro:"device_id" doc:"Interface order on the VM, from 0."`
	MAC       string `avro:"mac" doc:"MAC address, 02:… (locally administered)."`
	IP        string `avro:"ip" doc:"IPv4 address; empty until allocated."`
	Gateway   string `avro:"gateway" doc:"Gateway of the network."`
	Cidr      string `avro:"cidr" doc:"CIDR of the network."`
}

// NicChanged tells the read model a VM's NIC got or released its address
// (vm.events.v1, key: VM id).
type NicChanged struct {
	VmID     string `avro:"vm_id" doc:"VM; also the record key."`
	Account  string `avro:"account" doc:"Owning account."`
	ZoneID   string `avro:"zone_id" doc:"Zone."`
	Nic      Nic    `avro:"nic" doc:"The NIC as it is now."`
	Released bool   `avro:"released" doc:"The address was released (the VM was expunged)."`
	At       int64  `avro:"at" doc:"Unix milliseconds."`
}
