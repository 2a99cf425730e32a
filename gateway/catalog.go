package gateway

import (
	"fmt"
	"net/http"

	"github.com/vmplane/vmplane/projectors/postgres"
)

// listHosts is GET /v1/hosts (admin).
func (s *Server) listHosts(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	rows, err := s.rm.Hosts(r.Context(), page.ask())
	if err != nil {
		return fmt.Errorf("list hosts: %w", err)
	}
	rows, next := cutPage(page, rows, func(h postgres.Host) string { return h.ID })
	out := List[Host]{Items: make([]Host, len(rows)), Next: next}
	for i, h := range rows {
		out.Items[i] = hostJSON(h)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listOfferings is GET /v1/offerings (any role): the catalog is small, so
// it is one page.
func (s *Server) listOfferings(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.rm.Offerings(r.Context())
	if err != nil {
		return fmt.Errorf("list offerings: %w", err)
	}
	out := List[Offering]{Items: make([]Offering, len(rows))}
	for i, o := range rows {
		out.Items[i] = offeringJSON(o)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
