package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
)

// readBody reads the whole request body, bounded by MaxBodyBytes. The raw
// bytes are kept because the idempotency check compares them.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, errorf(http.StatusUnsupportedMediaType, codeUnsupportedMedia, "Content-Type must be application/json, not %q", ct)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "request body larger than %d bytes", tooLarge.Limit)
	}
	if err != nil {
		// The error names the sockets; the client needs only to know.
		s.log.Info("read request body", "request_id", requestID(r.Context()), "err", err)
		return nil, errorf(http.StatusBadRequest, codeInvalidRequest, "the request body could not be read in full")
	}
	return body, nil
}

// decodeStrict decodes one JSON object into v. Unknown fields are refused
// rather than ignored: a misspelt "forse": true silently doing a graceful
// stop is worse than an error.
func decodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errorf(http.StatusBadRequest, codeInvalidRequest, "request body is empty; a JSON object is expected")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errorf(http.StatusBadRequest, codeInvalidRequest, "request body has data after the JSON object")
	}
	if e := checkStrings(reflect.ValueOf(v), ""); e != nil {
		return e
	}
	return nil
}

func jsonError(err error) *apiError {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return errorf(http.StatusBadRequest, codeInvalidRequest, "malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "request body must be a JSON object, not %s", typ.Value)
			return e
		}
		if lo, hi, ok := intRange(typ.Type); ok && strings.HasPrefix(typ.Value, "number") {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "field %q must be a whole number from %d to %d", field, lo, hi)
			e.Details = map[string]any{"field": field}
			return e
		}
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "field %q must be %s, not %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
		e.Details = map[string]any{"field": field}
		return e
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, codeInvalidRequest, "malformed JSON: unexpected end of body")
	}
	// encoding/json reports an unknown field only as text.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field := strings.Trim(name, `"`)
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "unknown field %q", field)
		e.Details = map[string]any{"field": field}
		return e
	}
	return errorf(http.StatusBadRequest, codeInvalidRequest, "malformed JSON: %v", err)
}

// intRange is the range of an integer type: a JSON number that did not
// fit it (too large, or with a fraction) is answered with the range.
func intRange(t reflect.Type) (lo, hi int64, ok bool) {
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		bits := t.Bits()
		return -1 << (bits - 1), 1<<(bits-1) - 1, true
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return 0, 1<<t.Bits() - 1, true
	}
	return 0, 0, false
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int32", "int64", "float64":
		return "a number"
	case "slice":
		return "an array"
	}
	return fmt.Sprintf("a %s", goKind)
}
