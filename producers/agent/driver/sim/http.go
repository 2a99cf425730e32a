package sim

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/vmplane/vmplane/producers/agent"
)

// Handler exposes the simulator's controls over HTTP, so that an operator
// or a test can act behind vmplane's back on a running dev stack:
//
//	POST /hosts/{host}/crash | /recover | /partition | /heal
//	POST /hosts/{host}/vms/{vm}/power?state=Paused   (an out-of-band change)
//
// It answers 204 on success, 404 for an unknown host or VM, 400 for a bad
// request. It is a development tool: serve it on a loopback address only.
func (d *Driver) Handler() http.Handler {
	mux := http.NewServeMux()
	host := func(f func(string) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { answer(w, f(r.PathValue("host"))) }
	}
	mux.HandleFunc("POST /hosts/{host}/crash", host(d.CrashHost))
	mux.HandleFunc("POST /hosts/{host}/recover", host(d.RecoverHost))
	mux.HandleFunc("POST /hosts/{host}/partition", host(d.Partition))
	mux.HandleFunc("POST /hosts/{host}/heal", host(d.Heal))
	mux.HandleFunc("POST /hosts/{host}/vms/{vm}/power", func(w http.ResponseWriter, r *http.Request) {
		answer(w, d.OutOfBand(r.PathValue("host"), r.PathValue("vm"), r.URL.Query().Get("state")))
	})
	return mux
}

func answer(w http.ResponseWriter, err error) {
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, agent.ErrUnknownHost), errors.Is(err, agent.ErrUnknownVM):
		http.Error(w, err.Error(), http.StatusNotFound)
	default:
		http.Error(w, fmt.Sprintf("sim control: %v", err), http.StatusBadRequest)
	}
}
