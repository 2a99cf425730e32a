package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"
)

// maxIDLen bounds every id in a path or a filter: ids are UUIDs, host names
// or short names, never longer.
const maxIDLen = 128

// validIDString accepts 1..128 characters of [A-Za-z0-9._:-]: every id the
// system makes, and nothing that could smuggle a path, a query or a log line.
func validIDString(s string) bool {
	if len(s) == 0 || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// validID answers a malformed id as the not-found it is: no resource can
// have it.
func validID(kind, id string) error {
	if !validIDString(id) {
		return notFound(kind, truncate(id, 40))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// checkVars refuses, before any handler runs, a path whose parameters
// cannot be ids.
func (s *Server) checkVars(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		for name, v := range mux.Vars(r) {
			if err := validID(name, v); err != nil {
				return err
			}
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}
