package kafka_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vmplane/vmplane/internal/kafka"
)

// reach says whether a client of cfg gets through to the broker: a
// metadata request needs an authenticated connection.
func reach(t *testing.T, cfg kafka.Config) error {
	t.Helper()
	cl, err := kgo.NewClient(cfg.Opts(kgo.RequestRetries(0))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	return err
}

// TestSASLMechanisms: a kfake cluster with a SCRAM-SHA-512, a
// SCRAM-SHA-256 and a PLAIN user admits each with its own mechanism and
// refuses it with another's or a wrong password; PLAIN without TLS is
// refused before any dial unless allowed.
func TestSASLMechanisms(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "s512", "pw512"),
		kfake.Superuser("SCRAM-SHA-256", "s256", "pw256"),
		kfake.Superuser("PLAIN", "plain", "pwplain"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := func(mech, user, pass string) kafka.Config {
		return kafka.Config{Brokers: c.ListenAddrs(), Mechanism: mech, User: user, Password: pass, SASLWithoutTLS: true}
	}
	for _, tc := range []struct {
		name string
		cfg  kafka.Config
		ok   bool
	}{
		{"default is SCRAM-SHA-512", cfg("", "s512", "pw512"), true},
		{"SCRAM-SHA-256", cfg("SCRAM-SHA-256", "s256", "pw256"), true},
		{"PLAIN", cfg("PLAIN", "plain", "pwplain"), true},
		{"lower case", cfg("plain", "plain", "pwplain"), true},
		{"SCRAM-SHA-512 user with SCRAM-SHA-256", cfg("SCRAM-SHA-256", "s512", "pw512"), false},
		{"PLAIN user with SCRAM-SHA-512", cfg("SCRAM-SHA-512", "plain", "pwplain"), false},
		{"wrong PLAIN password", cfg("PLAIN", "plain", "nope"), false},
		{"no SASL", kafka.Config{Brokers: c.ListenAddrs()}, false},
	} {
		if err := reach(t, tc.cfg); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}

	clear := cfg("PLAIN", "plain", "pwplain")
	clear.SASLWithoutTLS = false
	err = clear.Validate()
	if err == nil || !strings.Contains(err.Error(), "SASL PLAIN sends the secret itself: use TLS") {
		t.Fatalf("PLAIN without TLS: %v", err)
	}
	if err := reach(t, clear); err == nil || !strings.Contains(err.Error(), "use TLS") {
		t.Fatalf("a client of a refused configuration dialed: %v", err)
	}
	clear.TLS.Enabled = true
	if err := clear.Validate(); err != nil {
		t.Fatalf("PLAIN over TLS: %v", err)
	}
	for _, bad := range []kafka.Config{
		{Mechanism: "GSSAPI", User: "u"},
		{Mechanism: "PLAIN", SASLWithoutTLS: true},
		{Mechanism: "OAUTHBEARER", SASLWithoutTLS: true},
		{OAuth: kafka.OAuth{Token: "t", TokenFile: "f"}, SASLWithoutTLS: true},
		{OAuth: kafka.OAuth{TokenURL: "http://idp.example/token", ClientID: "c"}, SASLWithoutTLS: true},
		{Prefix: "prod/"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

// oauthBroker is a kfake cluster that takes OAUTHBEARER, which kfake does
// not know: control functions answer the handshake and check each
// authentication's bearer token against good, recording every token seen.
type oauthBroker struct {
	c    *kfake.Cluster
	mu   sync.Mutex
	good map[string]bool
	seen []string
}

func newOAuthBroker(t *testing.T, good ...string) *oauthBroker {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b := &oauthBroker{c: c, good: map[string]bool{}}
	for _, g := range good {
		b.good[g] = true
	}
	c.ControlKey(int16(kmsg.SASLHandshake), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.SASLHandshakeRequest)
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = []string{"OAUTHBEARER"}
		if req.Mechanism != "OAUTHBEARER" {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.SASLAuthenticateRequest)
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		// RFC 7628: "n,,\x01auth=Bearer <token>\x01\x01"
		_, rest, _ := strings.Cut(string(req.SASLAuthBytes), "\x01auth=Bearer ")
		tok, _, _ := strings.Cut(rest, "\x01")
		b.mu.Lock()
		b.seen = append(b.seen, tok)
		ok := b.good[tok]
		b.mu.Unlock()
		if !ok {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := "invalid token"
			resp.ErrorMessage = &msg
		}
		return resp, nil, true
	})
	return b
}

func (b *oauthBroker) tokens() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen...)
}

// TestOAuthBearer: a static token, a token file read again at each
// authentication (a renewed token is what the next connection sends), and
// tokens from a client-credentials endpoint, asked once while valid; a
// refused token does not connect.
func TestOAuthBearer(t *testing.T) {
	b := newOAuthBroker(t, "static-1", "file-1", "file-2", "idp-1")
	base := kafka.Config{Brokers: b.c.ListenAddrs(), SASLWithoutTLS: true}

	static := base
	static.OAuth.Token = "static-1"
	if err := reach(t, static); err != nil {
		t.Fatalf("static token: %v", err)
	}
	static.OAuth.Token = "forged"
	if err := reach(t, static); err == nil {
		t.Fatal("a refused token connected")
	}

	file := filepath.Join(t.TempDir(), "token")
	fromFile := base
	fromFile.Mechanism, fromFile.OAuth.TokenFile = "OAUTHBEARER", file
	for _, tok := range []string{"file-1", "file-2"} {
		if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := reach(t, fromFile); err != nil {
			t.Fatalf("token file with %s: %v", tok, err)
		}
		if seen := b.tokens(); seen[len(seen)-1] != tok {
			t.Fatalf("broker saw %q, want %s last", seen, tok)
		}
	}

	var (
		mu    sync.Mutex
		asked int
	)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if r.Method != http.MethodPost || r.FormValue("grant_type") != "client_credentials" || r.FormValue("scope") != "kafka" ||
			id != "vmplane-gateway" || secret != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		mu.Lock()
		asked++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"idp-1","token_type":"Bearer","expires_in":3600}`))
	}))
	defer idp.Close()
	cc := base
	cc.OAuth = kafka.OAuth{TokenURL: idp.URL + "/token", ClientID: "vmplane-gateway", ClientSecret: "s3cret", Scope: "kafka"}
	cl, err := kgo.NewClient(cc.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Two connections (metadata, then the broker itself), one token asked.
	if _, err := kadm.NewClient(cl).ListTopics(t.Context()); err != nil {
		t.Fatalf("client credentials: %v", err)
	}
	if _, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), "none"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := asked
	mu.Unlock()
	if seen := b.tokens(); n != 1 || seen[len(seen)-1] != "idp-1" {
		t.Fatalf("token endpoint asked %d times, broker saw %q", n, seen)
	}
	cc.OAuth.ClientSecret = "wrong"
	if err := reach(t, cc); err == nil || !strings.Contains(err.Error(), "HTTP 401 invalid_client") {
		t.Fatalf("a refused client: %v", err)
	}
}
