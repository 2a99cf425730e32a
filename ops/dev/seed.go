package dev

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// Offerings are the catalog entries every dev stack starts with.
var Offerings = []schemas.Offering{
	{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024},
	{ID: "off-medium", Name: "medium", CPU: 2, MemoryMB: 4096},
	{ID: "off-large", Name: "large", CPU: 4, MemoryMB: 8192, HA: true},
}

// seed publishes what a fresh stack needs, once: the offerings and the admin
// account with its API key, written to var/dev/admin-key; then the
// template, pools and networks (seedStorage).
func (s *Stack) seed(ctx context.Context) error {
	rm, err := readmodel.NewReader(ctx, s.dsn)
	if err != nil {
		return err
	}
	defer rm.Close()
	cl, err := kgo.NewClient(s.kcfg.Opts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	codec := schemas.NewCodec(nil)
	var recs []schemas.Record
	now := time.Now().UnixMilli()
	offerings := Offerings
	if s.cfg.QemuHosts > 0 {
		offerings = append(slices.Clip(offerings), QemuOffering)
	}
	for _, o := range offerings {
		if _, err := rm.Offering(ctx, o.Name); err == nil {
			continue
		} else if !errors.Is(err, readmodel.ErrNotFound) {
			return err
		}
		recs = append(recs, schemas.Record{Topic: schemas.TopicCatalog, Key: o.ID, Value: &schemas.ServiceOffering{Offering: o, CreatedAt: now}})
	}

	keyFile := filepath.Join(s.cfg.VarDir, "dev", "admin-key")
	if b, err := os.ReadFile(keyFile); err == nil {
		key := strings.TrimSpace(string(b))
		if keyKnown(ctx, rm, key) {
			s.AdminKey = key
		}
	}
	if s.AdminKey == "" {
		key, admin, err := gateway.AdminAccount(now)
		if err != nil {
			return err
		}
		recs = append(recs, admin...)
		s.AdminKey = key
		if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
			return err
		}
	}
	if err := s.kcfg.Produce(ctx, cl, codec, recs...); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	// Wait for the projection, so the first request with the key works.
	deadline := time.Now().Add(30 * time.Second)
	for !keyKnown(ctx, rm, s.AdminKey) {
		if time.Now().After(deadline) {
			return errors.New("seed: the admin key did not reach the read model in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s.seedStorage(ctx, rm, cl)
}

// keyKnown reports whether the read model knows the key, giving a restarted
// projector a few seconds to catch up before a new key is issued.
func keyKnown(ctx context.Context, rm *readmodel.Reader, key string) bool {
	id, ok := gateway.ParseAPIKey(key)
	if !ok {
		return false
	}
	for i := 0; i < 50; i++ {
		if _, err := rm.APIKey(ctx, id); err == nil {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func waitHTTP(ctx context.Context, url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer in %s: %v", url, d, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitHostsUp waits until the read model shows n hosts Up.
// upHosts counts the hosts that are Up, whatever the admin's intent (a host
// left in maintenance or disabled by the last run is up, and the stack must
// start), page after page: a fleet of 10,000 is ten pages of the read model.
func upHosts(ctx context.Context, rm *readmodel.Reader) (int, error) {
	up, page := 0, readmodel.Page{Limit: 1000}
	for {
		hosts, err := rm.Hosts(ctx, page)
		if err != nil {
			return 0, err
		}
		for _, h := range hosts {
			if h.Status == "Up" {
				up++
			}
		}
		if len(hosts) < page.Limit {
			return up, nil
		}
		page.After = hosts[len(hosts)-1].ID
	}
}

func (s *Stack) waitHostsUp(ctx context.Context, n int, d time.Duration) error {
	rm, err := readmodel.NewReader(ctx, s.dsn)
	if err != nil {
		return err
	}
	defer rm.Close()
	deadline := time.Now().Add(d)
	for {
		up, err := upHosts(ctx, rm)
		if err != nil {
			return err
		}
		if up >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d sim hosts are Up after %s", up, n, d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
