package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/vmplane/vmplane/api"
)

// apiError is an error answer: its status and what writeError renders as
// api.Error, the one error shape of the API. Handlers return it.
type apiError struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
	// RetryAfter, when positive, is sent as the Retry-After header (s).
	RetryAfter int
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
	codeClientGone          = "client_closed_request"
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

// Bounds of what an error answer may echo: a message or detail quoting a
// request's header, path or body is cut, so that an error never sends back
// a 900 KB header.
const (
	maxErrorMessage = 1024
	maxErrorDetail  = 256
)

func writeError(w http.ResponseWriter, e *apiError) {
	out := api.Error{Code: e.Code, Message: clip(e.Message, maxErrorMessage)}
	if len(e.Details) > 0 {
		out.Details = make(map[string]any, len(e.Details))
		for k, v := range e.Details {
			if s, ok := v.(string); ok {
				v = clip(s, maxErrorDetail)
			}
			out.Details[clip(k, maxErrorDetail)] = v
		}
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status, api.ErrorResponse{Error: out})
}

// clip cuts s to at most n bytes, at a character boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
