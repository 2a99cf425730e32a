package schemas

// ServiceOffering is a catalog entry on the compacted catalog.v1 (key: id).
//
// Its storage tags are beside the Offering, not in it: a VM's record holds
// its Offering, and the 24 bytes of a slice there would take an idle
// VmRecord past its allocation size class (384 to 408 bytes, the 416-byte
// class: 32 B per VM). A deploy carries them to the VM's storage, the one
// part of the record that needs them.
type ServiceOffering struct {
	Offering
	Deleted     bool     `avro:"deleted" doc:"The offering was removed from the catalog."`
	CreatedAt   int64    `avro:"created_at" doc:"Unix milliseconds."`
	StorageTags []string `avro:"storage_tags" doc:"Tags the storage pool of the volumes of its VMs must carry."`
	Caller      Caller   `avro:"caller" doc:"Who made this version of the entry: account, API key and request id."`
}

// AccountCreated registers an account (accounts.v1, key: account id).
type AccountCreated struct {
	AccountID string `avro:"account_id" doc:"Account id; also the record key."`
	Name      string `avro:"name" doc:"Account name."`
	At        int64  `avro:"at" doc:"Unix milliseconds."`
	Caller    Caller `avro:"caller" doc:"Who asked: account, API key and request id (the gateway's request); account system for what vmplane writes itself."`
}

// ApiKeyIssued registers an API key of an account; only its hash travels.
type ApiKeyIssued struct {
	KeyID     string `avro:"key_id" doc:"Public key id (the prefix of the key)."`
	AccountID string `avro:"account_id" doc:"Account; also the record key."`
	Role      string `avro:"role" doc:"admin or user."`
	Hash      string `avro:"hash" doc:"Hex SHA-256 of the secret key."`
	ExpiresAt int64  `avro:"expires_at" doc:"Unix milliseconds; 0 for never."`
	At        int64  `avro:"at" doc:"Unix milliseconds."`
	Caller    Caller `avro:"caller" doc:"Who asked: account, API key and request id (the gateway's request); account system for what vmplane writes itself."`
}

// ApiKeyRevoked revokes an API key.
type ApiKeyRevoked struct {
	KeyID     string `avro:"key_id" doc:"Key id."`
	AccountID string `avro:"account_id" doc:"Account; also the record key."`
	At        int64  `avro:"at" doc:"Unix milliseconds."`
	Caller    Caller `avro:"caller" doc:"Who asked: account, API key and request id (the gateway's request)."`
}
