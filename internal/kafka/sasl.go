package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL mechanisms of Config.Mechanism. Managed Kafka services offer PLAIN
// (an API key and secret, over TLS) or OAUTHBEARER; self-run clusters
// usually SCRAM.
const (
	MechScram512    = "SCRAM-SHA-512"
	MechScram256    = "SCRAM-SHA-256"
	MechPlain       = "PLAIN"
	MechOAuthBearer = "OAUTHBEARER"
)

// OAuth is where an OAUTHBEARER client gets its token: a static Token, a
// TokenFile read again at every authentication (a sidecar or an agent
// renews it), or the client-credentials grant of an OAuth 2 / OIDC token
// endpoint (TokenURL, ClientID, ClientSecret, Scope), whose token is kept
// until shortly before it expires.
type OAuth struct {
	Token, TokenFile                        string
	TokenURL, ClientID, ClientSecret, Scope string
}

func (o OAuth) set() bool { return o.Token != "" || o.TokenFile != "" || o.TokenURL != "" }

// mechanism returns the SASL mechanism the configuration names, nil for
// none. Config.Mechanism empty means SCRAM-SHA-512 with a user, OAUTHBEARER
// with a token source, and no SASL otherwise.
func (c Config) mechanism() (sasl.Mechanism, error) {
	m := strings.ToUpper(c.Mechanism)
	if m == "" {
		switch {
		case c.User != "":
			m = MechScram512
		case c.OAuth.set():
			m = MechOAuthBearer
		default:
			return nil, nil
		}
	}
	cleartext := m == MechPlain || m == MechOAuthBearer
	if cleartext && !c.TLS.Enabled && !c.SASLWithoutTLS {
		// PLAIN sends the password itself and OAUTHBEARER a bearer token:
		// over plain TCP anyone on the path may replay them.
		return nil, fmt.Errorf("SASL %s sends the secret itself: use TLS (VMPLANE_KAFKA_TLS) or allow it in clear with VMPLANE_KAFKA_SASL_WITHOUT_TLS=true", m)
	}
	switch m {
	case MechScram512, MechScram256, MechPlain:
		if c.User == "" {
			return nil, fmt.Errorf("SASL %s needs a user (VMPLANE_KAFKA_USER)", m)
		}
		switch m {
		case MechScram512:
			return scram.Auth{User: c.User, Pass: c.Password}.AsSha512Mechanism(), nil
		case MechScram256:
			return scram.Auth{User: c.User, Pass: c.Password}.AsSha256Mechanism(), nil
		}
		return plain.Auth{User: c.User, Pass: c.Password}.AsMechanism(), nil
	case MechOAuthBearer:
		return c.OAuth.mechanism()
	}
	return nil, fmt.Errorf("SASL mechanism %q: want %s, %s, %s or %s", c.Mechanism, MechScram512, MechScram256, MechPlain, MechOAuthBearer)
}

func (o OAuth) mechanism() (sasl.Mechanism, error) {
	n := 0
	for _, s := range []string{o.Token, o.TokenFile, o.TokenURL} {
		if s != "" {
			n++
		}
	}
	switch {
	case n == 0:
		return nil, errors.New("SASL OAUTHBEARER needs a token (VMPLANE_KAFKA_OAUTH_TOKEN), a token file (VMPLANE_KAFKA_OAUTH_TOKEN_FILE) or a token endpoint (VMPLANE_KAFKA_OAUTH_TOKEN_URL)")
	case n > 1:
		return nil, errors.New("SASL OAUTHBEARER: give one of a token, a token file and a token endpoint")
	case o.Token != "":
		return oauth.Auth{Token: o.Token}.AsMechanism(), nil
	case o.TokenFile != "":
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			b, err := os.ReadFile(o.TokenFile)
			if err != nil {
				return oauth.Auth{}, fmt.Errorf("oauth token file: %w", err)
			}
			tok := strings.TrimSpace(string(b))
			if tok == "" {
				return oauth.Auth{}, fmt.Errorf("oauth token file %s is empty", o.TokenFile)
			}
			return oauth.Auth{Token: tok}, nil
		}), nil
	}
	src, err := newTokenSource(o)
	if err != nil {
		return nil, err
	}
	return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		tok, err := src.token(ctx)
		return oauth.Auth{Token: tok}, err
	}), nil
}

// tokenSource gets tokens by the client-credentials grant (RFC 6749 §4.4)
// and keeps one until a minute before it expires (or, for a short-lived
// one, until a fifth of its life is left).
type tokenSource struct {
	o   OAuth
	cl  *http.Client
	now func() time.Time

	mu      sync.Mutex
	tok     string
	renewAt time.Time
}

func newTokenSource(o OAuth) (*tokenSource, error) {
	if o.ClientID == "" {
		return nil, errors.New("SASL OAUTHBEARER token endpoint: needs a client id (VMPLANE_KAFKA_OAUTH_CLIENT_ID)")
	}
	u, err := url.Parse(o.TokenURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("oauth token url %q: not an absolute URL", o.TokenURL)
	}
	// The client secret goes in the request: only over TLS, but to a
	// token endpoint on this machine (a test's, a local agent's).
	if u.Scheme != "https" && (u.Scheme != "http" || !isLoopbackHost(u.Hostname())) {
		return nil, fmt.Errorf("oauth token url %s: want https (http only to a loopback address)", o.TokenURL)
	}
	return &tokenSource{o: o, cl: &http.Client{Timeout: 15 * time.Second, CheckRedirect: sameRule}, now: time.Now}, nil
}

// sameRule refuses a redirect the token URL itself would be refused for:
// the client follows a 307 with the request's body, the client secret.
func sameRule(req *http.Request, _ []*http.Request) error {
	if u := req.URL; u.Scheme != "https" && (u.Scheme != "http" || !isLoopbackHost(u.Hostname())) {
		return fmt.Errorf("oauth token endpoint redirects to %s: want https (http only to a loopback address)", u.Redacted())
	}
	return nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (s *tokenSource) token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok != "" && s.now().Before(s.renewAt) {
		return s.tok, nil
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if s.o.Scope != "" {
		form.Set("scope", s.o.Scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.o.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// client_secret_basic, which every authorization server must support
	// (RFC 6749 §2.3.1); id and secret are form-encoded first.
	req.SetBasicAuth(url.QueryEscape(s.o.ClientID), url.QueryEscape(s.o.ClientSecret))
	resp, err := s.cl.Do(req)
	if err != nil {
		return "", fmt.Errorf("oauth token endpoint: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("oauth token endpoint: %w", err)
	}
	var r struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	jerr := json.Unmarshal(body, &r)
	if resp.StatusCode != http.StatusOK {
		// The error fields only: an answer may echo what was sent.
		return "", fmt.Errorf("oauth token endpoint: HTTP %d %s %s", resp.StatusCode, r.Error, r.Description)
	}
	if jerr != nil || r.AccessToken == "" {
		return "", fmt.Errorf("oauth token endpoint: no access_token in its answer")
	}
	life := time.Duration(r.ExpiresIn) * time.Second
	if life <= 0 {
		life = 5 * time.Minute // no expires_in: ask again soon rather than never
	}
	early := min(time.Minute, life/5)
	s.tok, s.renewAt = r.AccessToken, s.now().Add(life-early)
	return s.tok, nil
}
