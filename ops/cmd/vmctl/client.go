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
	"strings"

	"github.com/vmplane/vmplane/api"
)

// client speaks the vmplane REST API.
type client struct {
	base string // e.g. http://127.0.0.1:8080
	key  string
	http *http.Client
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

// call sends body (JSON, when not nil) and decodes a 2xx answer into out
// (when not nil). A non-2xx answer is an *apiError.
func (c *client) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
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
		return fmt.Errorf("cannot reach the API at %s (--api, VMPLANE_API): %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var eb api.ErrorResponse
		if json.Unmarshal(raw, &eb) != nil || eb.Error.Code == "" {
			return &apiError{Status: resp.StatusCode, Body: api.Error{Code: "http_error", Message: strings.TrimSpace(firstLine(string(raw), resp.Status))}}
		}
		return &apiError{Status: resp.StatusCode, Body: eb.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func firstLine(s, fallback string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if s == "" {
		return fallback
	}
	return s
}

// all follows the next cursors of a list endpoint; path may carry the
// list's filters as its query.
func all[T any](ctx context.Context, c *client, path string) ([]T, error) {
	var out []T
	path, filters, _ := strings.Cut(path, "?")
	q, err := url.ParseQuery(filters)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", path, err)
	}
	q.Set("limit", "500")
	for {
		var page api.List[T]
		if err := c.call(ctx, http.MethodGet, path, q, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out, nil
		}
		q.Set("cursor", page.Next)
	}
}

// listAll fetches every page of path and prints the rows: as JSON (an empty
// list of raw resources prints []), or as the table.
func listAll[T any](ctx context.Context, a *cli, path string, table func(w io.Writer, rows []T) error) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	rows, err := all[T](ctx, a.c, path)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []T{} // an empty list prints [], not null
	}
	var out any = rows
	raw, _ := json.Marshal(out)
	return a.emit(raw, func(w io.Writer) error { return table(w, rows) })
}
