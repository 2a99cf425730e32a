package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// TestJobStreamEndsOverTheRealParts is issue 29's --wait hang over the
// real broker, projector and Postgres: a deploy that fails at once on the
// server, its events committed (in a transaction, as the VM processor
// commits them) before the projector has applied them. Job streams opened
// right after — the first starts the gateway's feed, the others join it —
// each send the snapshot, every step and the end exactly once, and close;
// so does a stream opened once the projector has the end, from its
// snapshot alone; and so do streams racing a running projector.
func TestJobStreamEndsOverTheRealParts(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres and the embedded broker")
	}
	ctx := t.Context()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	kcfg, dsn, pub := edges(t)
	rm, err := readmodel.NewReader(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)

	now := time.Now().UnixMilli()
	alice, aliceID, aliceHash, _ := gateway.NewAPIKey()
	if err := pub.Publish(ctx,
		schemas.Record{Topic: schemas.TopicCatalog, Key: "off-small", Value: &schemas.ServiceOffering{
			Offering: schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}, CreatedAt: now}},
		schemas.Record{Topic: schemas.TopicAccounts, Key: "acct-a", Value: &schemas.ApiKeyIssued{KeyID: aliceID, AccountID: "acct-a", Role: "user", Hash: aliceHash, At: now}},
	); err != nil {
		t.Fatal(err)
	}

	events := gateway.NewFanout(quiet, 0)
	events.FedByRun()
	feedCtx, stopFeed := context.WithCancel(ctx)
	feedDone := make(chan error, 1)
	go func() { feedDone <- events.Run(feedCtx, kcfg, gateway.OwnersFrom(rm), gateway.PositionFrom(rm)) }()
	t.Cleanup(func() {
		stopFeed()
		if err := <-feedDone; err != nil {
			t.Errorf("feed: %v", err)
		}
	})
	srv := httptest.NewServer(gateway.New(gateway.Config{Logger: quiet, Events: events}, rm, pub).Handler())
	t.Cleanup(srv.Close)

	stop := runProjector(t, kcfg, dsn)
	eventually(t, "the key and offering projected", func() bool {
		code, body := call(t, srv.URL, "GET", "/v1/offerings", alice, "")
		return code == 200 && strings.Contains(body, `"small"`)
	})

	// The VM processor's side: a job's acceptance, two steps and its
	// failure, committed in one transaction.
	codec, err := kcfg.Codec()
	if err != nil {
		t.Fatal(err)
	}
	vmProc, err := kgo.NewClient(kcfg.Opts(kgo.TransactionalID("test-vm-processor"))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vmProc.Close)
	fail := func(job api.Job) {
		t.Helper()
		ref := schemas.JobRef{JobID: job.ID, VmID: job.VmID, Account: "acct-a", JobType: "Deploy", Origin: "api", At: now}
		rec := func(v any) schemas.Record {
			return schemas.Record{Topic: schemas.TopicVmEvents, Key: job.VmID, Value: v}
		}
		if err := vmProc.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := kcfg.Produce(ctx, vmProc, codec,
			rec(&schemas.JobAccepted{JobRef: ref}),
			rec(&schemas.JobStepped{JobRef: ref, Seq: 1, TaskState: "Scheduling", Step: "place", Text: "PlaceVm sent"}),
			rec(&schemas.JobStepped{JobRef: ref, Seq: 2, TaskState: "Scheduling", Step: "placed", Text: "no host"}),
			rec(&schemas.JobFailed{JobRef: ref, Reason: "PlacementFailed", VmState: "Error"}),
		); err != nil {
			t.Fatal(err)
		}
		if err := vmProc.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	deploy := func(name string) api.Job {
		t.Helper()
		code, body := call(t, srv.URL, "POST", "/v1/vms", alice, `{"name":"`+name+`","offering":"small"}`)
		var job api.Job
		if code != http.StatusAccepted || json.Unmarshal([]byte(body), &job) != nil {
			t.Fatalf("deploy: %d %s", code, body)
		}
		return job
	}
	streams := func(job api.Job, n int) []string {
		t.Helper()
		bodies := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				bodies[i] = readStream(ctx, srv.URL+"/v1/jobs/"+job.ID+"/events", alice)
			}()
		}
		wg.Wait()
		return bodies
	}

	// The projector stops: the job is only accepted, and its events are
	// committed before any stream opens.
	stop()
	first := deploy("web-1")
	fail(first)
	for i, body := range streams(first, 5) {
		if snap := checkEnded(t, fmt.Sprintf("stream %d before the projection", i), first.ID, body); snap.State != "pending" {
			t.Fatalf("stream %d: snapshot %s, want the accepted job (pending)", i, snap.State)
		}
	}

	// The projector catches up: a stream then has the end in its
	// snapshot and closes after it.
	stop = runProjector(t, kcfg, dsn)
	defer stop()
	eventually(t, "the failure projected", func() bool {
		_, body := call(t, srv.URL, "GET", "/v1/jobs/"+first.ID, alice, "")
		return strings.Contains(body, `"state":"failed"`)
	})
	if snap := checkEnded(t, "stream after the projection", first.ID, readStream(ctx, srv.URL+"/v1/jobs/"+first.ID+"/events", alice)); snap.State != "failed" || len(snap.Steps) != 2 {
		t.Fatalf("snapshot after the projection: %+v", snap)
	}

	// Streams racing the running projector, as a client opens them right
	// after its POST.
	for i := range 10 {
		job := deploy(fmt.Sprintf("race-%d", i))
		var bodies []string
		done := make(chan struct{})
		go func() { defer close(done); bodies = streams(job, 3) }()
		fail(job)
		<-done
		for k, body := range bodies {
			checkEnded(t, fmt.Sprintf("race %d stream %d", i, k), job.ID, body)
		}
	}
}

// readStream reads a stream until the server closes it (at most 30 s).
func readStream(ctx context.Context, url, key string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "request: " + err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	if ctx.Err() != nil {
		b.WriteString("(not closed in 30 s)\n")
	}
	return b.String()
}

// checkEnded checks a job stream that closed: the job first, then the
// events its snapshot lacks, each once, and the end exactly once, last.
func checkEnded(t *testing.T, what, jobID, body string) api.Job {
	t.Helper()
	var snap api.Job
	var names []string
	steps := map[float64]int{}
	ends := 0
	for _, block := range strings.Split(body, "\n\n") {
		var name, data string
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		if name == "" {
			continue
		}
		names = append(names, name)
		if name == "job" {
			if len(names) != 1 || json.Unmarshal([]byte(data), &snap) != nil {
				t.Fatalf("%s: job event %q not first:\n%s", what, data, body)
			}
			for _, st := range snap.Steps {
				steps[float64(st.Seq)]++
			}
			if api.Finished(snap.State) {
				ends++
			}
			continue
		}
		var e api.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil || e.JobID != jobID {
			t.Fatalf("%s: event %s %q not the job's:\n%s", what, name, data, body)
		}
		switch {
		case ends > 0:
			t.Fatalf("%s: %s after the end:\n%s", what, name, body)
		case name == "JobStepped":
			steps[e.Data["seq"].(float64)]++
		case name == "JobFailed":
			ends++
		}
	}
	if len(names) == 0 || names[0] != "job" || ends != 1 || len(steps) != 2 || steps[1] != 1 || steps[2] != 1 ||
		strings.Count(strings.Join(names, " "), "JobAccepted") != map[bool]int{true: 1}[snap.State == "pending"] ||
		strings.Contains(body, "(not closed") {
		t.Fatalf("%s: want the job, each step and the end once, then the close:\n%s", what, body)
	}
	return snap
}

func call(t *testing.T, url, method, path, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
