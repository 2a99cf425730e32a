package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/schemas"
)

// validID answers a malformed id as the not-found it is: no resource can
// have it.
func validID(kind, id string) error {
	if !schemas.ValidID(id) {
		return notFound(kind, clip(id, 40))
	}
	return nil
}

// checkVars refuses, before any handler runs, a path whose parameters
// cannot be ids and a query that is not text.
func (s *Server) checkVars(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		for name, v := range mux.Vars(r) {
			if err := validID(name, v); err != nil {
				return err
			}
		}
		if err := checkQuery(r); err != nil {
			return err
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
