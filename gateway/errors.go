package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is the one error shape of the API:
// {"error": {"code", "message", "details"}}. Handlers return it; the
// response writer renders it.
type apiError struct {
	Status  int            `json:"-"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// Error codes. They name the condition so a client can branch on them
// without parsing the message.
const (
	codeUnauthorized     = "unauthorized"
	codeForbidden        = "forbidden"
	codeNotFound         = "not_found"
	codeInvalidState     = "invalid_state"
	codeInvalidRequest   = "invalid_request"
	codeValidation       = "validation_failed"
	codeTooLarge         = "request_too_large"
	codeUnsupportedMedia = "unsupported_media_type"
	codeIdempotency      = "idempotency_key_reused"
	// codeIdempotencyInFlight: the same request is still being served.
	codeIdempotencyInFlight = "idempotency_key_in_flight"
	codeRateLimited         = "rate_limited"
	codeConflict            = "already_exists"
	codeUnavailable         = "unavailable"
	codeInternal            = "internal"
)

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func notFound(kind, id string) *apiError {
	return errorf(http.StatusNotFound, codeNotFound, "%s %s not found", kind, id)
}

// writeJSON writes v with status; a failure to write means the client is
// gone, so there is nobody to tell.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.Status, map[string]*apiError{"error": e})
}
