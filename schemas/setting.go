package schemas

// SettingChanged sets an operator setting at one scope, on the compacted
// settings.v1 (key: the scope, its id and the name; schemas/settings.Key).
// Every processor reads the whole topic and applies a change before its
// next step (docs/design.md §3, §13); the catalogue of names, types and
// ranges is schemas/settings.
type SettingChanged struct {
	Name    string `avro:"name" doc:"Setting name, from the settings catalogue (ping.timeout)."`
	Scope   string `avro:"scope" doc:"global, zone or cluster."`
	ScopeID string `avro:"scope_id" doc:"The zone or cluster the value holds for; empty for global."`
	Value   string `avro:"value" doc:"The value as an operator writes it (20s, 2.5, UserDispersingPlanner); empty for the default again."`
	By      string `avro:"by" doc:"Account of the admin who set it."`
	At      int64  `avro:"at" doc:"Unix milliseconds."`
	Caller  Caller `avro:"caller" doc:"Who asked: account, API key and request id (the gateway's request)."`
}
