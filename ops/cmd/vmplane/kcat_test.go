package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestKcatReadsConfluentFraming is an analyst's pipeline against the real
// broker: the roles write vm.events.v1 in the Confluent framing through a
// Schema Registry (franz-go's fake), kcat — the one ops/install.sh
// installs — reads the topic, and `vmplane decode --schema-registry`
// turns its output into JSON; kcat's own format strings show the keys and
// the `type` headers an analyst filters on. Records are produced as the
// roles produce them (kafka.Produce: murmur2 keys, `type` header).
func TestKcatReadsConfluentFraming(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if testing.Short() {
			t.Skip("kcat is not installed (ops/install.sh installs it)")
		}
		t.Fatal("kcat is not installed; ops/install.sh installs it")
	}
	cfg, cl := dlqBroker(t)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	cfg.RegistryURL = reg.URL()
	codec, err := cfg.Codec()
	if err != nil {
		t.Fatal(err)
	}
	var recs []schemas.Record
	for _, v := range records() {
		recs = append(recs, schemas.Record{Topic: schemas.TopicVmEvents, Key: "vm-1", Value: v})
	}
	if err := (kafka.Config{}).Produce(t.Context(), cl, codec, recs...); err != nil {
		t.Fatal(err)
	}
	for _, v := range records() {
		if subject := schemas.Subject(schemas.TypeName(v)); !reg.SubjectExists(subject) {
			t.Errorf("the registry has no subject %s", subject)
		}
	}

	read := func(format string) []byte {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), kcat, "-b", strings.Join(cfg.Brokers, ","), "-C", "-t", schemas.TopicVmEvents,
			"-o", "beginning", "-e", "-q", "-f", format)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kcat -f %q: %v\n%s", format, err, stderr.String())
		}
		return out
	}

	var out bytes.Buffer
	if err := decodeStream(t.Context(), codec, read(`%s\n`), &out); err != nil {
		t.Fatal(err)
	}
	wantDecoded(t, out.String())

	meta := strings.Split(strings.TrimSpace(string(read(`%k %h\n`))), "\n")
	if len(meta) != len(records()) {
		t.Fatalf("kcat listed %d records, want %d:\n%s", len(meta), len(records()), strings.Join(meta, "\n"))
	}
	for i, v := range records() {
		if want := "vm-1 type=" + schemas.TypeName(v); meta[i] != want {
			t.Errorf("record %d: kcat says %q, want %q", i, meta[i], want)
		}
	}
}
