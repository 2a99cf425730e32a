package crashloop

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// api is a small client of the gateway's REST API.
type api struct {
	base string
	key  string
	hc   *http.Client
}

func newAPI(base, key string) *api {
	return &api{base: base, key: key, hc: &http.Client{Timeout: 5 * time.Second}}
}

func (a *api) withKey(key string) *api { return &api{base: a.base, key: key, hc: a.hc} }

// apiError is an answer that is not 2xx.
type apiError struct {
	Status int
	Code   string
	Msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Msg) }

// once sends one request; out receives a 2xx body.
func (a *api) once(ctx context.Context, method, path, idem string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		return &apiError{Status: resp.StatusCode, Code: e.Error.Code, Msg: e.Error.Message}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// call sends a request and sends it again, with the same Idempotency-Key,
// while the stack cannot answer (no connection, 5xx, 429, a key still in
// flight), for up to tries attempts. A 4xx answer is final.
func (a *api) call(ctx context.Context, method, path string, body, out any, tries int) error {
	idem := ""
	if method != http.MethodGet {
		idem = newKey()
	}
	var err error
	for i := 0; i < tries; i++ {
		if err = a.once(ctx, method, path, idem, body, out); err == nil || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(200+150*i) * time.Millisecond):
		}
	}
	return err
}

func retryable(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status >= 500 || ae.Status == http.StatusTooManyRequests || ae.Code == "idempotency_key_in_flight"
	}
	return true // no answer: the gateway or what it needs is down
}

func status(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

func newKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// The JSON the harness reads.

type jobJSON struct {
	ID       string `json:"id"`
	VmID     string `json:"vm_id"`
	Type     string `json:"type"`
	State    string `json:"state"`
	Reason   string `json:"reason"`
	Detail   string `json:"detail"`
	TaskStat string `json:"task_state"`
}

type vmJSON struct {
	ID             string   `json:"id"`
	Offering       string   `json:"offering"`
	VmState        string   `json:"vm_state"`
	TaskState      string   `json:"task_state"`
	PowerState     string   `json:"power_state"`
	HostID         string   `json:"host_id"`
	AllowedActions []string `json:"allowed_actions"`
	CPU            int32    `json:"cpu"`
	MemoryMB       int64    `json:"memory_mb"`
}

type hostJSON struct {
	ID            string   `json:"id"`
	ClusterID     string   `json:"cluster_id"`
	Hypervisor    string   `json:"hypervisor"`
	Status        string   `json:"status"`
	ResourceState string   `json:"resource_state"`
	Reservable    bool     `json:"reservable"`
	UsedCPU       int32    `json:"used_cpu"`
	UsedMemoryMB  int64    `json:"used_memory_mb"`
	Tags          []string `json:"tags"`
}

type list[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next"`
}

func finished(state string) bool {
	switch state {
	case "succeeded", "failed", "cancelled", "rejected":
		return true
	}
	return false
}
