package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// records are values whose encodings hold newlines, including one followed
// by a byte that may start a value, so that splitting on newlines alone
// would cut them.
func records() []any {
	ref := schemas.JobRef{JobID: "job-1", VmID: "vm-1", Account: "acme", JobType: "Deploy", Origin: "api", At: 1700000000000}
	return []any{
		&schemas.JobAccepted{JobRef: ref},
		&schemas.JobStepped{JobRef: ref, Seq: 1, TaskState: "Scheduling", Step: "place", Text: "line one\n\x00line two\n\xc3\x01three"},
		&schemas.VmStateChanged{VmID: "vm-1", Account: "acme", VmState: "Active", PowerState: "PowerOn", HostID: "host-2", JobID: "job-1"},
		&schemas.JobSucceeded{JobRef: ref, VmState: "Active"},
		&schemas.VmRecord{VmID: "vm-1", Name: "web\nserver", VmState: "Active", Rare: &schemas.VmRare{TaskState: "Rebooting"}},
	}
}

func wantDecoded(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := records()
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, l := range lines {
		var d decoded
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		if d.Type != schemas.TypeName(want[i]) {
			t.Errorf("line %d type %s, want %s", i, d.Type, schemas.TypeName(want[i]))
		}
	}
	var step decoded
	_ = json.Unmarshal([]byte(lines[1]), &step)
	if step.Value["text"] != "line one\n\x00line two\n\xc3\x01three" && step.Value["text"] != "line one\n\x00line two\n\ufffd\x01three" {
		t.Errorf("text %q", step.Value["text"])
	}
	if step.Value["job_id"] != "job-1" || step.Value["seq"] != float64(1) || step.Value["task_state"] != "Scheduling" {
		t.Errorf("JobStepped fields (Avro names, JobRef flattened): %v", step.Value)
	}
	var rec decoded
	_ = json.Unmarshal([]byte(lines[4]), &rec)
	if rec.Value["task_state"] != "Rebooting" || rec.Value["vm_state"] != "Active" || rec.Value["expunge_at"] != float64(0) {
		t.Errorf("VmRecord fields (Avro names, Rare flattened): %v", rec.Value)
	}
}

// TestDecodeSingleObject: what `kcat -f '%s\n'` prints of single-object
// encoded values, and one raw value, decode to JSON.
func TestDecodeSingleObject(t *testing.T) {
	var in bytes.Buffer
	for _, v := range records() {
		b, err := schemas.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(b)
		in.WriteByte('\n')
	}
	var out bytes.Buffer
	if err := decodeStream(t.Context(), schemas.NewCodec(nil), in.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	wantDecoded(t, out.String())

	raw, _ := schemas.Marshal(records()[1])
	out.Reset()
	if err := decodeStream(t.Context(), schemas.NewCodec(nil), raw, &out); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("raw value: %v\n%s", err, out.String())
	}
	if err := decodeStream(t.Context(), schemas.NewCodec(nil), []byte("not avro\n"), &out); err == nil {
		t.Fatal("garbage decoded")
	}
}

// TestDecodeConfluent: Confluent-framed values (00, schema id, body) decode
// through a Schema Registry's HTTP API.
func TestDecodeConfluent(t *testing.T) {
	ids := map[string]int{}
	byID := map[int]string{}
	for _, v := range records() {
		name := schemas.TypeName(v)
		if _, ok := ids[name]; !ok {
			ids[name] = len(ids) + 100
			byID[ids[name]], _ = schemas.Schema(name)
		}
	}
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id int
		if _, err := fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/schemas/ids/"), &id); err != nil || byID[id] == "" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_code":40403,"message":"Schema not found"}`))
			return
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		_ = json.NewEncoder(w).Encode(map[string]any{"schema": byID[id]})
	}))
	defer reg.Close()

	var in bytes.Buffer
	for _, v := range records() {
		single, err := schemas.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		frame := []byte{0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(frame[1:], uint32(ids[schemas.TypeName(v)]))
		in.Write(append(frame, single[10:]...))
		in.WriteByte('\n')
	}
	codec, err := kafka.Config{RegistryURL: reg.URL}.Codec()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := decodeStream(t.Context(), codec, in.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	wantDecoded(t, out.String())
	if err := decodeStream(t.Context(), schemas.NewCodec(nil), in.Bytes(), &out); err == nil || !strings.Contains(err.Error(), "needs a schema registry") {
		t.Fatalf("without a registry: %v", err)
	}
}
