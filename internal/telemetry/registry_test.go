package telemetry

import (
	"bytes"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vmplane/vmplane/schemas"
)

// scrape serves Default's /metrics as a scraper would read it and parses
// it: a page the parser refuses fails the test.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	Default.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics answered %d: %s", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("content type %q", ct)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("/metrics is not valid text exposition: %v", err)
	}
	return fams
}

// TestDefaultLintsClean holds every family of Default to Prometheus's
// naming and help rules (client_golang's promlint).
func TestDefaultLintsClean(t *testing.T) {
	PrepareConsumer("lint-consumer", "t")
	problems, err := testutil.GatherAndLint(Default.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		// The runtime's own families are client_golang's to name.
		if strings.HasPrefix(p.Metric, "go_") || strings.HasPrefix(p.Metric, "process_") {
			continue
		}
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestRuntimeMetricsServed: /metrics has the Go runtime's, the process's
// and the build's families beside vmplane's.
func TestRuntimeMetricsServed(t *testing.T) {
	fams := scrape(t)
	for _, name := range []string{"go_goroutines", "go_gc_duration_seconds", "go_memstats_heap_alloc_bytes",
		"go_build_info", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"} {
		if fams[name] == nil {
			t.Errorf("no %s on /metrics", name)
		}
	}
}

// TestPreparedSeriesAreZero: a role's known label sets read 0 before the
// first event, so a fresh /metrics lacks none of them.
func TestPreparedSeriesAreZero(t *testing.T) {
	PrepareConsumer("prep-consumer", schemas.TopicVmPower, schemas.TopicVmCommands)
	PrepareProcessor("prep-processor")
	PrepareJobs("HARestart")
	PrepareProjector("prep-projector", "prep_table")
	PrepareAgent()
	fams := scrape(t)
	has := func(name string, labels map[string]string) {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("no family %s", name)
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			match := true
			for k, v := range labels {
				match = match && got[k] == v
			}
			if !match {
				continue
			}
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				v = float64(m.GetHistogram().GetSampleCount())
			}
			if v != 0 {
				t.Errorf("%s%v = %v before any event", name, labels, v)
			}
			return
		}
		t.Errorf("no series %s%v", name, labels)
	}
	for _, topic := range []string{schemas.TopicVmPower, schemas.TopicVmCommands} {
		for _, n := range []string{"vmplane_records_processed_total", "vmplane_records_failed_total", "vmplane_records_misrouted_total"} {
			has(n, map[string]string{"consumer": "prep-consumer", "topic": topic})
		}
	}
	has("vmplane_retrying_seconds", map[string]string{"consumer": "prep-consumer"})
	has("vmplane_transactions_aborted_total", map[string]string{"processor": "prep-processor"})
	has("vmplane_transaction_commit_seconds", map[string]string{"processor": "prep-processor"})
	has("vmplane_processor_state_keys", map[string]string{"processor": "prep-processor"})
	for _, typ := range []string{"Deploy", "Terminate", "HARestart"} {
		has("vmplane_jobs_in_flight", map[string]string{"type": typ})
		for _, r := range jobResults {
			has("vmplane_job_duration_seconds", map[string]string{"type": typ, "result": r})
		}
	}
	has("vmplane_projector_apply_seconds", map[string]string{"projector": "prep-projector"})
	has("vmplane_clickhouse_batch_rows", map[string]string{"table": "prep_table"})
	has("vmplane_agent_commands_total", map[string]string{"type": "StartVm", "result": "error"})
	if _, ok := fams["vmplane_jobs_in_flight"]; ok {
		for _, m := range fams["vmplane_jobs_in_flight"].GetMetric() {
			if m.GetLabel()[0].GetValue() == "CancelJob" {
				t.Error("CancelJob is no job of its own")
			}
		}
	}
}

// TestNamesListsEveryFamily: Names has the families that have no series
// yet (lag without a source) and the runtime's, as a dashboard may query.
func TestNamesListsEveryFamily(t *testing.T) {
	names := Default.Names()
	for _, n := range []string{"kafka_consumergroup_lag", "vmplane_dead_letters", "vmplane_http_request_seconds",
		"vmplane_vms", "go_goroutines", "process_cpu_seconds_total", "go_build_info"} {
		if !slices.Contains(names, n) {
			t.Errorf("Names lacks %s: %v", n, names)
		}
	}
}

// TestGaugeFuncDuplicatesKeptOnce: a source that emits a label set twice
// (one group registered by two roles of a process) does not fail the
// scrape.
func TestGaugeFuncDuplicatesKeptOnce(t *testing.T) {
	r := NewRegistry()
	r.GaugeFunc("dup", "Duplicates.", []string{"g"}, func(emit func(float64, ...string)) {
		emit(1, "a")
		emit(2, "a")
		emit(3, "b")
		emit(4) // wrong arity: dropped
	})
	r.GaugeFunc("dup", "Again.", []string{"g"}, func(emit func(float64, ...string)) { emit(9, "c") })
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || len(mfs[0].GetMetric()) != 2 || mfs[0].GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("got %v", mfs)
	}
}

// TestReRegistrationDiffers panics: one name is one family.
func TestReRegistrationDiffers(t *testing.T) {
	r := NewRegistry()
	r.Counter("x_total", "X.", "a")
	defer func() {
		if recover() == nil {
			t.Fatal("a counter registered again with other labels did not panic")
		}
	}()
	r.Counter("x_total", "X.", "b")
}

// BenchmarkCounterWith is the cost of a label lookup and an increment, what
// a call site that keeps no handle pays per event.
func BenchmarkCounterWith(b *testing.B) {
	v := NewRegistry().Counter("bench_total", "B.", "consumer", "topic")
	for b.Loop() {
		v.With("vmplane-processor-vm", "vm.power.v1").Inc()
	}
}

// BenchmarkCounterHandle is the cost of an increment through a kept handle.
func BenchmarkCounterHandle(b *testing.B) {
	c := NewRegistry().Counter("bench_total", "B.", "consumer", "topic").With("vmplane-processor-vm", "vm.power.v1")
	for b.Loop() {
		c.Inc()
	}
}

// BenchmarkHistogramObserve is one observation through a kept handle.
func BenchmarkHistogramObserve(b *testing.B) {
	h := NewRegistry().Histogram("bench_seconds", "B.", latencyBuckets, "processor").With("vm")
	for b.Loop() {
		h.Observe(0.003)
	}
}

// BenchmarkCounterWithNoLabels is With of a family without labels, a
// handle looked up once (the suppressed power reports of a storm).
func BenchmarkCounterWithNoLabels(b *testing.B) {
	v := NewRegistry().Counter("bench_total", "B.")
	for b.Loop() {
		v.With().Inc()
	}
}
