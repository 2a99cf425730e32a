package gateway

import (
	"context"
	"net/http"
	"time"
)

// healthz says the process serves HTTP; it checks nothing else, so that a
// database outage does not get every gateway restarted.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz says whether this gateway can serve: the read model answers and
// the configured Ready check (Kafka) passes.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{}
	ok := true
	if err := s.rm.Ready(ctx); err != nil {
		checks["read_model"], ok = err.Error(), false
	} else {
		checks["read_model"] = "ok"
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(ctx); err != nil {
			checks["ready"], ok = err.Error(), false
		} else {
			checks["ready"] = "ok"
		}
	}
	if !ok {
		e := errorf(http.StatusServiceUnavailable, codeUnavailable, "not ready")
		e.Details = map[string]any{"checks": checks}
		return e
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
	return nil
}
