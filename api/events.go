package api

// Event is one record of vm.events.v1 as the streams (GET /v1/events, GET
// /v1/jobs/{id}/events) send it, as the data of a Server-Sent Event named
// after Type. ID is "partition:offset": a client resumes with it as
// Last-Event-ID.
type Event struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	VmID  string `json:"vm_id"`
	JobID string `json:"job_id,omitempty"`
	// Data are the record's fields by their Avro names.
	Data map[string]any `json:"data"`
}
