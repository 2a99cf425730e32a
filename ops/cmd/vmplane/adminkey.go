package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/schemas"
)

// runAdminKey is `vmplane admin-key`: an admin API key for an installation
// that has none. The gateway issues keys only to the holder of an admin
// key, so the first one is written to accounts.v1 directly, as `vmplane
// dev` seeds its own: the account "admin" (written again when it exists,
// which changes nothing) and a new key, printed once on standard output.
// The key works once the Postgres projector has it, a second or so later.
func runAdminKey(ctx context.Context, args []string, log *slog.Logger) error {
	f := newFlags("admin-key")
	k := f.kafka()
	timeout := f.dur("timeout", "VMPLANE_ADMIN_KEY_TIMEOUT", 30*time.Second, "how long to wait for the brokers")
	if err := f.Parse(args); err != nil {
		return err
	}
	cfg, err := k.config()
	if err != nil {
		return err
	}
	codec, err := cfg.Codec()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	key, recs, err := gateway.AdminAccount(time.Now().UnixMilli())
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := cfg.Produce(pctx, cl, codec, recs...); err != nil {
		return fmt.Errorf("write the admin key to %s: %w", schemas.TopicAccounts, err)
	}
	id, _ := gateway.ParseAPIKey(key)
	log.Info("admin key issued", "account", "admin", "key_id", id)
	_, err = fmt.Fprintln(os.Stdout, key)
	return err
}
