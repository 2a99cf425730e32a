package schemas

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/vmplane/vmplane/schemas/confluent"
)

var update = flag.Bool("update", false, "rewrite avro/*.avsc from the Go types (and add a history version for a changed schema)")

// TestAvscMatchGoTypes holds the embedded .avsc files and the Go types to
// each other: a changed Go type must come with its regenerated schema.
func TestAvscMatchGoTypes(t *testing.T) {
	for _, r := range recordDocs {
		typ := reflect.TypeOf(r.v)
		want := schemaOf(typ, r.doc)
		path := filepath.Join("avro", typ.Name()+".avsc")
		got, _ := os.ReadFile(path)
		if *update {
			if string(got) != want {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				writeHistory(t, typ.Name(), want)
			}
			continue
		}
		if string(got) != want {
			t.Errorf("%s differs from the Go type %s; run go test ./schemas -update", path, typ.Name())
		}
	}
}

// writeHistory stores a released schema version; compatibility is held
// against every stored version.
func writeHistory(t *testing.T, name, text string) {
	for v := 1; ; v++ {
		p := filepath.Join("avro", "history", name+".v"+strconv.Itoa(v)+".avsc")
		old, err := os.ReadFile(p)
		if err == nil {
			if string(old) == text {
				return
			}
			continue
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
}

func TestEveryFieldDocumented(t *testing.T) {
	for _, name := range Names() {
		s, _ := Schema(name)
		n, err := parseSchema(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(s, `"doc"`) || n.kind != "record" {
			t.Errorf("%s: no doc", name)
		}
	}
}

// TestBackwardTransitive holds every schema against all its stored versions.
func TestBackwardTransitive(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("avro", "history", "*.avsc"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stored schema versions: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		old, _ := os.ReadFile(f)
		name := recordName(string(old))
		cur, ok := Schema(name)
		if !ok {
			t.Errorf("%s: record %q no longer exists", f, name)
			continue
		}
		seen[name] = true
		if err := CheckBackward(cur, string(old)); err != nil {
			t.Errorf("%s is not backward compatible with %s: %v", name, f, err)
		}
	}
	for _, n := range Names() {
		if !seen[n] {
			t.Errorf("%s has no stored version in avro/history", n)
		}
	}
}

func TestCheckBackwardCatchesBreaks(t *testing.T) {
	base := `{"type":"record","name":"X","fields":[{"name":"a","type":"string","default":""},{"name":"n","type":"int","default":0}]}`
	cases := []struct {
		name, reader string
		ok           bool
	}{
		{"same", base, true},
		{"added with default", `{"type":"record","name":"X","fields":[{"name":"a","type":"string","default":""},{"name":"n","type":"int","default":0},{"name":"b","type":"long","default":0}]}`, true},
		{"added without default", `{"type":"record","name":"X","fields":[{"name":"a","type":"string"},{"name":"n","type":"int"},{"name":"b","type":"long"}]}`, false},
		{"removed field", `{"type":"record","name":"X","fields":[{"name":"a","type":"string","default":""}]}`, true},
		{"promoted int to long", `{"type":"record","name":"X","fields":[{"name":"a","type":"string"},{"name":"n","type":"long"}]}`, true},
		{"narrowed to boolean", `{"type":"record","name":"X","fields":[{"name":"a","type":"string"},{"name":"n","type":"boolean"}]}`, false},
		{"renamed record", `{"type":"record","name":"Y","fields":[]}`, false},
	}
	for _, c := range cases {
		err := CheckBackward(c.reader, base)
		if (err == nil) != c.ok {
			t.Errorf("%s: ok=%v, err=%v", c.name, c.ok, err)
		}
	}
}

func sample() *Deploy {
	return &Deploy{
		VmCommand: VmCommand{CommandID: "c1", VmID: "vm-1", Account: "acme", Origin: OriginAPI, IssuedAt: 1700000000000},
		Name:      "web-1", ZoneID: "zone-1",
		Offering: Offering{ID: "o1", Name: "small", CPU: 1, MemoryMB: 1024, HostTags: []string{"ssd"}},
		HA:       true,
	}
}

func TestSingleObjectRoundTrip(t *testing.T) {
	b, err := Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0xC3 || b[1] != 0x01 {
		t.Fatalf("header %x", b[:2])
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample()) {
		t.Fatalf("got %+v", got)
	}
	rec := &VmRecord{VmID: "v", ReportSeq: map[string]int64{"h1": 7}, Rare: &VmRare{Queue: []QueuedCommand{{Type: "Stop", Payload: b}}}}
	b2, err := Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	got2, err := Unmarshal(b2)
	if err != nil || !reflect.DeepEqual(got2, rec) {
		t.Fatalf("VmRecord round trip: %v %+v", err, got2)
	}
}

func TestConfluentFramingWithRegistry(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	cl, err := confluent.New(reg.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := NewCodec(cl)
	b, err := c.Encode(t.Context(), sample())
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 {
		t.Fatalf("want Confluent magic byte, got %x", b[0])
	}
	// A second codec (another process) learns the id from the registry.
	other := NewCodec(cl)
	got, err := other.Decode(t.Context(), b)
	if err != nil || !reflect.DeepEqual(got, sample()) {
		t.Fatalf("decode: %v %+v", err, got)
	}
	// Decoders accept both framings.
	single, _ := Marshal(sample())
	if got, err := other.Decode(t.Context(), single); err != nil || !reflect.DeepEqual(got, sample()) {
		t.Fatalf("single-object through registry codec: %v", err)
	}
	// Without a registry, a Confluent frame is a clear error.
	if _, err := NewCodec(nil).Decode(context.Background(), b); err == nil {
		t.Fatal("want error for Confluent frame without registry")
	}
}

func TestDecodeGarbageNamesWhere(t *testing.T) {
	c := NewCodec(nil)
	for _, b := range [][]byte{nil, {0xC3}, []byte("garbage bytes"), {0xC3, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {0, 0, 0, 0, 1, 2}} {
		_, err := c.DecodeAt(context.Background(), "vm.commands.v1", 3, 42, b)
		if err == nil || !strings.Contains(err.Error(), "vm.commands.v1/3@42") {
			t.Errorf("%x: err %v", b, err)
		}
	}
	good, _ := Marshal(sample())
	if _, err := c.DecodeAt(context.Background(), "t", 0, 0, good[:len(good)-3]); err == nil {
		t.Error("truncated record decoded")
	}
	if _, err := c.DecodeAt(context.Background(), "t", 0, 0, append(bytes.Clone(good), 1)); err == nil {
		t.Error("record with trailing bytes decoded")
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := Marshal(sample())
	f.Add(good)
	f.Add([]byte("x"))
	for _, m := range decodeMix() {
		b, _ := Marshal(m.v)
		f.Add(b)
	}
	c := NewCodec(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = c.DecodeAt(context.Background(), "t", 0, 0, b)
		// Unmarshal recovers nothing: a panic fails. What decodes encodes
		// again to bytes that decode to the same value (compared as
		// bytes, which holds for NaN too).
		v, err := Unmarshal(b)
		if err != nil {
			return
		}
		again, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unmarshal(again)
		if err != nil {
			t.Fatalf("%x decoded to %+v, which encodes to undecodable %x: %v", b, v, again, err)
		}
		if third, _ := Marshal(back); !bytes.Equal(third, again) {
			t.Fatalf("%x: %x re-encodes as %x", b, again, third)
		}
	})
}

func TestTopicTableCoversEveryType(t *testing.T) {
	carried := map[string]bool{}
	for _, tp := range Topics {
		for _, n := range tp.Types {
			if _, ok := Schema(n); !ok {
				t.Errorf("topic %s lists unknown type %s", tp.Name, n)
			}
			carried[n] = true
		}
	}
	for _, n := range Names() {
		if !carried[n] {
			t.Errorf("type %s is carried by no topic", n)
		}
	}
}
