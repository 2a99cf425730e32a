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
// the configured Ready check (Kafka, and in the dev stack the projectors)
// passes. It answers without a key, so a failing check is named but its
// error, which names hosts, users and addresses, goes only to the log.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{}
	ok := true
	check := func(name string, err error) {
		if err == nil {
			checks[name] = "ok"
			return
		}
		ok = false
		checks[name] = "failing; the gateway's log says why (request " + requestID(r.Context()) + ")"
		s.log.Warn("not ready", "check", name, "request_id", requestID(r.Context()), "err", err)
	}
	check("read_model", s.rm.Ready(ctx))
	if s.cfg.Ready != nil {
		check("ready", s.cfg.Ready(ctx))
	}
	if !ok {
		e := errorf(http.StatusServiceUnavailable, codeUnavailable, "not ready")
		e.Details = map[string]any{"checks": checks}
		return e
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
	return nil
}
