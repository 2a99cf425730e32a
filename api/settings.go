package api

import "time"

// Setting is the JSON of an operator setting (GET /v1/settings): its row
// of the catalogue, the value in effect where it was asked for (globally,
// or for the zone and cluster of the query) with the scope it comes from,
// and every value set at any scope.
type Setting struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	Default     string   `json:"default"`
	Range       string   `json:"range"`
	Scopes      []string `json:"scopes"`
	AppliedBy   []string `json:"applied_by"`
	Description string   `json:"description"`
	// Value is the value in effect; Scope is where it comes from: default,
	// global, zone or cluster.
	Value  string         `json:"value"`
	Scope  string         `json:"scope"`
	Values []SettingValue `json:"values"`
}

// SettingValue is a value set at one scope; ScopeID is empty for global.
type SettingValue struct {
	Scope   string    `json:"scope"`
	ScopeID string    `json:"scope_id"`
	Value   string    `json:"value"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
}

// SettingRequest is the body of PUT /v1/settings/{name}: the value,
// globally, or for a zone or a cluster (one of them at most).
type SettingRequest struct {
	Value   string `json:"value" required:"true"`
	Zone    string `json:"zone,omitempty"`
	Cluster string `json:"cluster,omitempty"`
}
