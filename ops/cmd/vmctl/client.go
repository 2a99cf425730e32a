package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vmplane/vmplane/api"
)

// client speaks the vmplane REST API.
type client struct {
	base string // e.g. http://127.0.0.1:8080
	key  string
	http *http.Client
	// notice tells the user something on the way (a retry); nil: silence.
	notice func(msg string)
}

func newClient(base, key string) *client {
	// No client-wide timeout: a long-poll legitimately holds a response
	// for up to a minute; each call is bounded by its context instead.
	return &client{base: strings.TrimRight(base, "/"), key: key, http: &http.Client{}}
}

// apiError is an error answer: its HTTP status and the API's error.
type apiError struct {
	Status int
	Body   api.Error
	// retryAfter is the answer's Retry-After; 0 when it had none.
	retryAfter time.Duration
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("%s (HTTP %d %s)", e.Body.Message, e.Status, e.Body.Code)
	if allowed, ok := e.Body.Details["allowed_actions"].([]any); ok {
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = fmt.Sprint(a)
		}
		sort.Strings(names)
		msg += "; allowed actions: " + strings.Join(names, ", ")
	}
	return msg
}

// passing says whether the refusal may be gone when asked again: a 429,
// or a 503 that says when (Retry-After) or says to retry, as the gateway
// does of a command it could not write to the log; a 503 such as "the
// event history is not configured" is no passing state.
//
// A change (safe false) is asked again after a 429 only: the rate limit
// refuses before anything is done, but a 503 of a command the log did not
// take may come after the broker wrote it (a timeout), and the gateway
// frees the Idempotency-Key of any answer that is no success, so asking
// again would do the change twice (two VMs for one deploy).
func (e *apiError) passing(safe bool) bool {
	switch e.Status {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable:
		return safe && (e.retryAfter > 0 || strings.Contains(e.Body.Message, "retry"))
	}
	return false
}

// isRateLimited says whether the gateway refused a call for the key's rate
// or its open streams (429).
func isRateLimited(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests
}

func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// Retries: a 429 (the key's rate) or a passing 503 (a gateway that could
// not write the command to the log) is asked again after the answer's
// Retry-After, else after retryPause doubling, at most maxRetries
// times and never past the call's deadline. Only a request that may be
// sent twice is: a GET, or a change carrying an Idempotency-Key, which
// vmctl gives every change it sends (a key per request, the same on each
// retry of it), so that the gateway answers a repeat with the first
// answer instead of doing the work again (gateway/idempotency.go).
const (
	maxRetries = 3
	// maxRetryWait bounds one wait: a longer Retry-After is an error now
	// rather than a command that seems to hang.
	maxRetryWait = 30 * time.Second
)

// retryPause is the first wait when the answer says none.
var retryPause = time.Second

// call sends body (JSON, when not nil) and decodes a 2xx answer into out
// (when not nil), retrying as above. A non-2xx answer is an *apiError.
func (c *client) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return c.send(ctx, method, path, query, body, out, maxRetries)
}

// send is call with at most retries retries.
func (c *client) send(ctx context.Context, method, path string, query url.Values, body, out any, retries int) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var payload []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		payload = b
	}
	idemKey := ""
	if method != http.MethodGet && method != http.MethodHead {
		idemKey = "vmctl-" + uuid.NewString()
	}
	pause := retryPause
	for attempt := 0; ; attempt++ {
		err := c.once(ctx, method, path, u, payload, idemKey, out)
		var ae *apiError
		if attempt >= retries || !errors.As(err, &ae) || !ae.passing(idemKey == "") {
			return err
		}
		wait := pause
		if ae.retryAfter > 0 {
			wait = ae.retryAfter
		}
		if d, ok := ctx.Deadline(); wait > maxRetryWait || ok && time.Until(d) < wait {
			return err
		}
		if c.notice != nil {
			c.notice(fmt.Sprintf("%s %s: HTTP %d, asking again in %s (%d of %d)", method, path, ae.Status, wait, attempt+1, retries))
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		pause *= 2
	}
}

// once sends one request.
func (c *client) once(ctx context.Context, method, path, u string, payload []byte, idemKey string, out any) error {
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// url.Error repeats method and URL; the base is what the user can fix.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("cannot reach the API at %s (--api, VMPLANE_API, the profile's api): %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errorOf(resp, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// errorOf is the *apiError of a non-2xx answer whose body is raw.
func errorOf(resp *http.Response, raw []byte) *apiError {
	ae := &apiError{Status: resp.StatusCode, retryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	var eb api.ErrorResponse
	if json.Unmarshal(raw, &eb) != nil || eb.Error.Code == "" {
		ae.Body = api.Error{Code: "http_error", Message: strings.TrimSpace(firstLine(string(raw), resp.Status))}
	} else {
		ae.Body = eb.Error
	}
	return ae
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func firstLine(s, fallback string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if s == "" {
		return fallback
	}
	return s
}
