package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

type handlerKey struct{}

// TestLearnedIDsReachEarlierContexts: a line logged with the context a
// request started with names the key and the job learned deeper down, as
// the gateway's request line does; without WithIDs, SetKey is a no-op.
func TestLearnedIDsReachEarlierContexts(t *testing.T) {
	var b bytes.Buffer
	log := NewJSONLogger(&b, slog.LevelInfo)
	outer := WithIDs(context.Background())
	inner := context.WithValue(WithIDs(outer), handlerKey{}, 1) // a handler's own context
	SetKey(inner, "key-1")
	SetJob(inner, "job-1")
	log.InfoContext(outer, "request")
	SetKey(context.Background(), "nowhere")
	log.InfoContext(context.Background(), "bare")
	var lines [2]map[string]any
	dec := json.NewDecoder(&b)
	for i := range lines {
		if err := dec.Decode(&lines[i]); err != nil {
			t.Fatal(err)
		}
	}
	if lines[0]["key_id"] != "key-1" || lines[0]["job_id"] != "job-1" {
		t.Fatalf("request line %v", lines[0])
	}
	if _, ok := lines[1]["key_id"]; ok {
		t.Fatalf("bare line %v", lines[1])
	}
}

// TestRecordContextNamesTheJob: a consumed record's command_id is the
// job of the log lines about it.
func TestRecordContextNamesTheJob(t *testing.T) {
	kr := &kgo.Record{Headers: []kgo.RecordHeader{{Key: "command_id", Value: []byte("job-7")},
		{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}}}
	ctx := RecordContext(context.Background(), kr)
	if JobID(ctx) != "job-7" || TraceID(ctx) != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("job %q trace %q", JobID(ctx), TraceID(ctx))
	}
	if JobID(RecordContext(context.Background(), &kgo.Record{})) != "" {
		t.Fatal("a record without command_id has a job")
	}
}
