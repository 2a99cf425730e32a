package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/gateway/console"
)

// Config configures a Server. Zero fields take the defaults below.
type Config struct {
	// Addr is the listen address (default 127.0.0.1:8080).
	Addr string
	// ZoneID is the zone new VMs are deployed in (default zone-1).
	ZoneID string
	// MaxBodyBytes bounds request bodies (default 64 KiB).
	MaxBodyBytes int64
	// Logger receives one line per request (default slog.Default()).
	Logger *slog.Logger
	// Ready is checked by /readyz besides the read model, e.g. that Kafka
	// answers. Nil means nothing more to check.
	Ready func(ctx context.Context) error
	// IdempotencyTTL is how long an Idempotency-Key is remembered (default
	// 24h); IdempotencyMax bounds the remembered keys (default 100000).
	IdempotencyTTL time.Duration
	IdempotencyMax int
	// Idempotency stores Idempotency-Keys; nil keeps them in this process's
	// memory (bounded by IdempotencyMax), which a restart forgets. A
	// running gateway passes readmodel.Idempotency, shared by every instance.
	Idempotency IdempotencyStore
	// Accepted keeps the VMs, jobs and leases handed out in a 202 until
	// the projector has them, so that a lookup by id finds them at once
	// (accepted.go); nil keeps them in this process's memory, which
	// another instance and a restart do not see. A running gateway passes
	// readmodel.Accepted, shared by every instance.
	Accepted AcceptedStore
	// RatePerSecond and RateBurst size each API key's token bucket (default
	// 200/s, burst 400); a negative RatePerSecond turns the limit off.
	RatePerSecond float64
	RateBurst     int
	// AnonRatePerSecond and AnonBurst size the token bucket of each client
	// address that every request answered 401 spends (default 20/s, burst
	// 100; negative turns it off). An address with an empty bucket is
	// answered 429, before any read of a key this instance has not cached.
	// Behind a proxy every client shares the proxy's address: raise it
	// there.
	AnonRatePerSecond float64
	AnonBurst         int
	// MaxStreamsPerKey bounds the event streams and long-polls one API key
	// holds open at once on this instance (default 16; negative: no
	// bound). One more is a 429 with Retry-After.
	MaxStreamsPerKey int
	// Heartbeat is how often an idle event stream sends a comment (so that
	// proxies keep it open and a gone client is noticed) and checks again
	// that its key is still valid (default 15 s).
	Heartbeat time.Duration
	// Events feeds the Server-Sent Event streams (GET /v1/events,
	// /v1/jobs/{id}/events); nil answers 503 there.
	Events *Fanout
	// Capacity reads the placement views (zone capacity); nil means the
	// read model's, when it has them.
	Capacity CapacityReader
	// JobChanges wakes long-polls (GET /v1/jobs/{id}?wait=) when the
	// projector commits a change to their job; nil leaves them to their
	// re-reads.
	JobChanges JobWatcher
	// KeyCacheTTL is how long an API key's row, once read, is used without
	// reading it again (default 1 s; negative reads it at every request). A
	// revoked key is refused by every instance within it after the
	// revocation is projected.
	KeyCacheTTL time.Duration
	// PollEvery is how often a long-poll re-reads the read model besides
	// what JobChanges says (default 100 ms).
	PollEvery time.Duration
	// PingInterval is the ping interval the host processors start with
	// (their --ping-interval); the ping.interval setting overrides it, as
	// it does theirs. It says how far a host's last_ping_at may lag behind
	// its agent's last ping (default: the setting's default, 60 s).
	PingInterval time.Duration
	// History reads the event history in ClickHouse (VM history, time
	// travel, old jobs' journals, analysts' queries); nil answers 503 there.
	History History
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.ZoneID == "" {
		c.ZoneID = "zone-1"
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 64 << 10
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.IdempotencyTTL <= 0 {
		c.IdempotencyTTL = 24 * time.Hour
	}
	if c.IdempotencyMax <= 0 {
		c.IdempotencyMax = 100_000
	}
	if c.RatePerSecond == 0 {
		c.RatePerSecond = 200
	}
	if c.RateBurst <= 0 {
		c.RateBurst = 400
	}
	if c.AnonRatePerSecond == 0 {
		c.AnonRatePerSecond = 20
	}
	if c.AnonBurst <= 0 {
		c.AnonBurst = 100
	}
	if c.MaxStreamsPerKey == 0 {
		c.MaxStreamsPerKey = 16
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.KeyCacheTTL == 0 {
		c.KeyCacheTTL = time.Second
	}
	if c.PollEvery <= 0 {
		c.PollEvery = 100 * time.Millisecond
	}
	if c.PingInterval <= 0 {
		c.PingInterval = time.Minute
	}
	return c
}

// Server is the REST API.
type Server struct {
	cfg   Config
	rm    ReadModel
	pub   Publisher
	log   *slog.Logger
	idem  IdempotencyStore
	rate  *rateLimiter
	anon  *rateLimiter // per client address, for traffic without a known key
	slots *streamSlots
	keys  *keyCache
	now   func() time.Time
	newID func() string

	// accepted is cfg.Accepted, or the in-memory store.
	accepted AcceptedStore
	// joinWait bounds a job stream's wait for the projector (join.go).
	joinWait time.Duration
}

// New returns a Server that reads rm and publishes commands through pub.
func New(cfg Config, rm ReadModel, pub Publisher) *Server {
	cfg = cfg.withDefaults()
	var idem IdempotencyStore = newMemoryIdempotency(cfg.IdempotencyMax)
	if cfg.Idempotency != nil {
		idem = cfg.Idempotency
	}
	s := &Server{
		cfg:   cfg,
		rm:    rm,
		pub:   pub,
		log:   cfg.Logger,
		idem:  idem,
		rate:  newRateLimiter(cfg.RatePerSecond, cfg.RateBurst),
		anon:  newRateLimiter(cfg.AnonRatePerSecond, cfg.AnonBurst),
		slots: newStreamSlots(cfg.MaxStreamsPerKey),
		keys:  newKeyCache(cfg.KeyCacheTTL, 100_000),
		now:   time.Now,
		newID: newUUID,

		joinWait: joinWait,
	}
	s.accepted = cfg.Accepted
	if s.accepted == nil {
		s.accepted = newMemoryAccepted(cfg.IdempotencyMax)
	}
	return s
}

// Handler returns the routes wrapped in the request-id, logging and
// recovery middleware.
func (s *Server) Handler() http.Handler {
	r := s.router()
	return s.withTelemetry(r, s.withRequestID(s.withRecovery(r)))
}

// Routes lists the API's routes as "METHOD /v1/path", walking the router:
// the OpenAPI test compares them with the document. HEAD, which every GET
// route also answers, is not listed.
func (s *Server) Routes() []string {
	var out []string
	_ = s.router().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		if err != nil || !strings.HasPrefix(path, "/v1/") || path == "/v1/openapi.json" {
			return nil
		}
		methods, _ := route.GetMethods()
		for _, m := range methods {
			if m != http.MethodHead {
				out = append(out, m+" "+path)
			}
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// access is what a route asks of the caller before its Idempotency-Key is
// looked at: a stored answer is never replayed to a key that may not make
// the request.
type access int

const (
	anyRole access = iota
	adminRole
)

// publicRoutes are what answers without a key: the probes, the OpenAPI
// document and the web console, a page of the API's own origin that calls
// /v1 with the user's key (gateway/console, docs/console.md).
func (s *Server) publicRoutes(r *mux.Router) {
	r.Handle("/healthz", s.handle(s.healthz)).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/readyz", s.handle(s.readyz)).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/v1/openapi.json", s.handle(s.openAPIDoc)).Methods(http.MethodGet, http.MethodHead)
	con := console.Handler()
	r.Handle("/", con).Methods(http.MethodGet, http.MethodHead)
	r.PathPrefix("/console/").Handler(con).Methods(http.MethodGet, http.MethodHead)
}

func (s *Server) router() *mux.Router {
	r := mux.NewRouter()
	s.publicRoutes(r)

	// Routes are registered on the root router: a gorilla/mux subrouter
	// answers a method mismatch with 404 instead of 405. The order of the
	// chain is the order of the checks: who (authenticate), which ids
	// (checkVars), how often (limit), which role, and only then a stored
	// answer (idempotent).
	route := func(method, path string, need access, redact func([]byte) []byte, h func(http.ResponseWriter, *http.Request) error) {
		next := s.idempotent(s.handle(h), redact)
		if need == adminRole {
			next = s.adminOnly(next)
		}
		methods := []string{method}
		if method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		r.Handle("/v1"+path, s.authenticate(s.checkVars(s.limit(next)))).Methods(methods...)
	}
	api := func(path string, h func(http.ResponseWriter, *http.Request) error, method string) {
		route(method, path, anyRole, nil, h)
	}
	admin := func(path string, h func(http.ResponseWriter, *http.Request) error, method string) {
		route(method, path, adminRole, nil, h)
	}
	api("/vms", s.deployVM, http.MethodPost)
	api("/vms", s.listVMs, http.MethodGet)
	api("/vms/{id}", s.getVM, http.MethodGet)
	api("/vms/{id}", s.deleteVM, http.MethodDelete)
	api("/vms/{id}/actions", s.vmAction, http.MethodPost)
	api("/vms/{id}/snapshots", s.listSnapshots, http.MethodGet)
	api("/jobs/{id}", s.getJob, http.MethodGet)
	api("/jobs", s.listJobs, http.MethodGet)
	api("/jobs/{id}/journal", s.jobJournalAnywhere, http.MethodGet)
	api("/jobs/{id}/cancel", s.cancelJob, http.MethodPost)
	api("/vms/{id}/history", s.vmHistory, http.MethodGet)
	admin("/journal/query", s.journalQuery, http.MethodPost)
	api("/alerts", s.listAlerts, http.MethodGet)
	api("/alerts/{id}", s.getAlert, http.MethodGet)
	api("/alerts/{id}/ack", s.ackAlert, http.MethodPost)
	admin("/hosts", s.listHosts, http.MethodGet)
	admin("/hosts/{id}", s.getHost, http.MethodGet)
	admin("/hosts/{id}/actions", s.hostAction, http.MethodPost)
	admin("/hosts", s.addHost, http.MethodPost)
	api("/offerings", s.listOfferings, http.MethodGet)
	api("/offerings/{id}", s.getOffering, http.MethodGet)
	admin("/offerings", s.createOffering, http.MethodPost)
	admin("/offerings/{id}", s.updateOffering, http.MethodPatch)
	admin("/offerings/{id}", s.deleteOffering, http.MethodDelete)
	api("/planners", s.listPlanners, http.MethodGet)
	s.storageRoutes(api, admin)
	admin("/settings", s.listSettings, http.MethodGet)
	admin("/settings/{name}", s.getSetting, http.MethodGet)
	admin("/settings/{name}", s.putSetting, http.MethodPut)
	admin("/settings/{name}", s.deleteSetting, http.MethodDelete)
	admin("/zones/{id}/capacity", s.zoneCapacity, http.MethodGet)
	admin("/accounts", s.createAccount, http.MethodPost)
	admin("/accounts", s.listAccounts, http.MethodGet)
	api("/accounts/{id}", s.getAccount, http.MethodGet)
	// The answer to a key's creation holds the key: what is kept for a
	// retry with the same Idempotency-Key is that answer without it.
	route(http.MethodPost, "/accounts/{id}/keys", adminRole, withoutSecret, s.createKey)
	api("/accounts/{id}/keys", s.listKeys, http.MethodGet)
	api("/accounts/{id}/keys/{key}", s.getKey, http.MethodGet)
	admin("/accounts/{id}/keys/{key}", s.revokeKey, http.MethodDelete)
	api("/events", s.streamEvents, http.MethodGet)
	api("/jobs/{id}/events", s.streamJob, http.MethodGet)
	api("/leases", s.createLease, http.MethodPost)
	api("/leases", s.listLeases, http.MethodGet)
	api("/leases/{id}", s.getLease, http.MethodGet)
	api("/leases/{id}", s.updateLease, http.MethodPut)
	api("/leases/{id}", s.deleteLease, http.MethodDelete)
	api("/leases/{id}/events", s.leaseEvents, http.MethodGet)

	r.NotFoundHandler = s.handle(func(w http.ResponseWriter, req *http.Request) error {
		return errorf(http.StatusNotFound, codeNotFound, "no route %s %s", clip(req.Method, 16), clip(req.URL.Path, 200))
	})
	r.MethodNotAllowedHandler = s.handle(func(w http.ResponseWriter, req *http.Request) error {
		allow := allowed(r, req)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		e := errorf(http.StatusMethodNotAllowed, codeInvalidRequest, "method %s not allowed on %s", clip(req.Method, 16), clip(req.URL.Path, 200))
		e.Details = map[string]any{"allow": allow}
		return e
	})
	return r
}

// handlerFunc is a route's handler; registrar registers one on a path.
type (
	handlerFunc = func(http.ResponseWriter, *http.Request) error
	registrar   = func(path string, h handlerFunc, method string)
)

// storageRoutes registers the templates, pools, networks and volumes:
// api for any role, admin for admins only.
func (s *Server) storageRoutes(api, admin registrar) {
	api("/templates", s.listTemplates, http.MethodGet)
	api("/templates/{id}", s.getTemplate, http.MethodGet)
	admin("/templates", s.createTemplate, http.MethodPost)
	admin("/templates/{id}", s.deleteTemplate, http.MethodDelete)
	admin("/pools", s.listPools, http.MethodGet)
	admin("/pools", s.createPool, http.MethodPost)
	admin("/pools/{id}", s.getPool, http.MethodGet)
	admin("/pools/{id}", s.updatePool, http.MethodPatch)
	admin("/pools/{id}", s.deletePool, http.MethodDelete)
	api("/networks", s.listNetworks, http.MethodGet)
	api("/networks/{id}", s.getNetwork, http.MethodGet)
	admin("/networks", s.createNetwork, http.MethodPost)
	admin("/networks/{id}", s.deleteNetwork, http.MethodDelete)
	api("/volumes", s.listVolumes, http.MethodGet)
	api("/volumes/{id}", s.getVolume, http.MethodGet)
	api("/volumes/{id}/actions", s.volumeAction, http.MethodPost)
}

// knownMethods are the methods a route may have, in the order Allow lists
// them.
var knownMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowed lists the methods router serves at req's path.
func allowed(router *mux.Router, req *http.Request) []string {
	var out []string
	for _, m := range knownMethods {
		probe := req.WithContext(req.Context()) // a shallow copy
		probe.Method = m
		var match mux.RouteMatch
		if router.Match(probe, &match) && match.MatchErr == nil {
			out = append(out, m)
		}
	}
	return out
}

// Run serves until ctx is cancelled, then shuts down gracefully: requests in
// flight get up to 10 s to finish, and long-polls answer at once with the
// job as it is rather than holding the shutdown.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("gateway listen %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened (tests use port 0).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	drain := make(chan struct{})
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		// A long-poll holds the response for up to maxWait; the write
		// timeout leaves room for it.
		WriteTimeout: maxWait + 15*time.Second,
		IdleTimeout:  120 * time.Second,
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.WithoutCancel(ctx), drainKey{}, drain)
		},
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go s.sweep(sweepCtx)
	s.log.Info("gateway listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("gateway serve: %w", err)
	case <-ctx.Done():
	}
	close(drain)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("gateway shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway serve: %w", err)
	}
	return nil
}

// sweepEvery is how often a gateway deletes the Idempotency-Keys older
// than IdempotencyTTL and the accepted records older than acceptedTTL;
// every instance does, and a DELETE twice is harmless. A sweep that failed
// (a gateway started before the read model's schema was migrated, a
// database restarting) is tried again after sweepRetry.
const (
	sweepEvery = time.Hour
	sweepRetry = time.Minute
)

// sweeper is a store that forgets what is older than ttl
// (readmodel.Idempotency, readmodel.Accepted).
type sweeper interface {
	Sweep(ctx context.Context, now time.Time, ttl time.Duration) error
}

// sweep sweeps the stores that can, at start and every sweepEvery (after
// a failure, sweepRetry), until ctx ends.
func (s *Server) sweep(ctx context.Context) { s.sweepEach(ctx, sweepEvery, sweepRetry) }

// sweepEach is sweep with its intervals given.
func (s *Server) sweepEach(ctx context.Context, every, retry time.Duration) {
	idem, _ := s.idem.(sweeper)
	accepted, _ := s.accepted.(sweeper)
	if idem == nil && accepted == nil {
		return
	}
	for {
		failed := false
		if idem != nil {
			if err := idem.Sweep(ctx, s.now(), s.cfg.IdempotencyTTL); err != nil && ctx.Err() == nil {
				s.log.Warn("sweep idempotency keys", "err", err, "retry_in", retry)
				failed = true
			}
		}
		if accepted != nil {
			if err := accepted.Sweep(ctx, s.now(), acceptedTTL); err != nil && ctx.Err() == nil {
				s.log.Warn("sweep accepted ids", "err", err, "retry_in", retry)
				failed = true
			}
		}
		next := every
		if failed {
			next = retry
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
	}
}

// drainKey carries, in a request's context, the channel closed when the
// server starts shutting down.
type drainKey struct{}

func draining(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(drainKey{}).(chan struct{})
	return ch // nil (never ready) under httptest
}
