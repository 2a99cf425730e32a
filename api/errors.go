package api

// ErrorResponse is every error answer of the API:
// {"error": {"code", "message", "details"}}. Every error has a code: an
// answer that decodes without one (a proxy's page, say) is none of the
// API's.
type ErrorResponse struct {
	Error Error `json:"error"`
}

// Error is what went wrong. Code names the condition, so that a client
// branches on it without parsing Message; Details, when present, name the
// field at fault and what would have been accepted (allowed_actions,
// allowed values, the methods of a route).
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}
