package gateway

import (
	"fmt"
	"net/http"

	"github.com/vmplane/vmplane/api"
)

// listOfferings is GET /v1/offerings (any role): the catalog is small, so
// it is one page.
func (s *Server) listOfferings(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.rm.Offerings(r.Context())
	if err != nil {
		return fmt.Errorf("list offerings: %w", err)
	}
	out := api.List[api.Offering]{Items: make([]api.Offering, len(rows))}
	for i, o := range rows {
		out.Items[i] = offeringJSON(o)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
