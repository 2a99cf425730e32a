package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestTopicsCreateCheck: on an empty broker `topics check` lists every
// topic missing and fails; `topics create` under a prefix makes them and
// passes its own check, twice; the unprefixed names are still missing.
func TestTopicsCreateCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := func(cfg kafka.Config, create bool) (string, error) {
		var out bytes.Buffer
		err := topics(t.Context(), &out, cfg, create, kafka.TopicOptions{Replication: 1, MinInsync: 1})
		return out.String(), err
	}
	prod := kafka.Config{Brokers: b.Addrs(), Prefix: "prod."}
	out, err := run(prod, false)
	if err == nil || strings.Count(out, ": missing\n") != len(schemas.Topics) || !strings.HasPrefix(out, "prod.vm.commands.v1: missing\n") {
		t.Fatalf("check of an empty broker: %v\n%s", err, out)
	}
	for range 2 {
		out, err := run(prod, true)
		if want := fmt.Sprintf("%d topics as the topic table says\n", len(schemas.Topics)); err != nil || out != want {
			t.Fatalf("create: %v\n%s", err, out)
		}
	}
	if out, err := run(prod, false); err != nil {
		t.Fatalf("check after create: %v\n%s", err, out)
	}
	if out, err := run(kafka.Config{Brokers: b.Addrs()}, false); err == nil || !strings.Contains(out, "\nvm.events.v1: missing\n") {
		t.Fatalf("unprefixed check: %v\n%s", err, out)
	}
}
