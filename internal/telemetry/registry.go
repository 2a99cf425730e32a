package telemetry

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Registry is a client_golang registry behind the small API the call
// sites use: counters, gauges and histograms by label values, and gauges
// read at scrape time. Registering a name twice returns the first family,
// so every processor of one process can ask for the same metric.
type Registry struct {
	reg *prometheus.Registry

	mu       sync.Mutex
	families map[string]*family
}

type family struct {
	kind   string
	labels []string
	vec    any // CounterVec, GaugeVec, HistogramVec or *funcCollector
}

// NewRegistry returns an empty registry: no runtime or process metrics.
func NewRegistry() *Registry {
	return &Registry{reg: prometheus.NewRegistry(), families: map[string]*family{}}
}

// Default is the registry every role reports to and /metrics serves. It
// has the Go runtime's metrics (go_*), the process's (process_*, on
// Linux) and the binary's build information (go_build_info) besides
// vmplane's own.
var Default = func() *Registry {
	r := NewRegistry()
	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
	)
	return r
}()

// family returns the family registered under name, or registers the one
// newVec makes (its collector, and the vec the call sites use).
func (r *Registry) family(name, kind string, labels []string, newVec func() (prometheus.Collector, any)) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.families[name]; ok {
		if f.kind != kind || !slices.Equal(f.labels, labels) {
			panic(fmt.Sprintf("telemetry: metric %s registered twice with different kinds or labels", name))
		}
		return f.vec
	}
	c, vec := newVec()
	r.reg.MustRegister(c)
	r.families[name] = &family{kind: kind, labels: slices.Clone(labels), vec: vec}
	return vec
}

// CounterVec is a counter family.
type CounterVec struct {
	v *prometheus.CounterVec
	// plain is the one series of a family without labels, looked up once.
	plain prometheus.Counter
}

// Counter is one counter series. Keep it rather than calling With again
// on a hot path: With checks and hashes the label values and takes a
// read lock (about 60 ns for two labels; an increment through a kept
// Counter is 2 ns).
type Counter struct{ c prometheus.Counter }

// Counter registers (or returns) a counter family.
func (r *Registry) Counter(name, help string, labels ...string) CounterVec {
	return r.family(name, "counter", labels, func() (prometheus.Collector, any) {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		cv := CounterVec{v: v}
		if len(labels) == 0 {
			cv.plain = v.WithLabelValues()
		}
		return v, cv
	}).(CounterVec)
}

// With returns the series of the label values, in the family's label
// order; the first call makes the series, at 0.
func (v CounterVec) With(values ...string) Counter {
	if v.plain != nil && len(values) == 0 {
		return Counter{v.plain}
	}
	return Counter{v.v.WithLabelValues(values...)}
}

// Add adds d (≥ 0) to the counter.
func (c Counter) Add(d float64) { c.c.Add(d) }

// Inc adds one.
func (c Counter) Inc() { c.c.Inc() }

// Value returns the counter's value.
func (c Counter) Value() float64 { return read(c.c).GetCounter().GetValue() }

// GaugeVec is a gauge family.
type GaugeVec struct {
	v     *prometheus.GaugeVec
	plain prometheus.Gauge
}

// Gauge is one gauge series.
type Gauge struct{ g prometheus.Gauge }

// Gauge registers (or returns) a gauge family.
func (r *Registry) Gauge(name, help string, labels ...string) GaugeVec {
	return r.family(name, "gauge", labels, func() (prometheus.Collector, any) {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		gv := GaugeVec{v: v}
		if len(labels) == 0 {
			gv.plain = v.WithLabelValues()
		}
		return v, gv
	}).(GaugeVec)
}

// With returns the series of the label values.
func (v GaugeVec) With(values ...string) Gauge {
	if v.plain != nil && len(values) == 0 {
		return Gauge{v.plain}
	}
	return Gauge{v.v.WithLabelValues(values...)}
}

// Set sets the gauge.
func (g Gauge) Set(x float64) { g.g.Set(x) }

// Add adds d (may be negative).
func (g Gauge) Add(d float64) { g.g.Add(d) }

// Value returns the gauge's value.
func (g Gauge) Value() float64 { return read(g.g).GetGauge().GetValue() }

// GaugeFunc registers a gauge family whose series collect returns at each
// scrape (consumer lag, sizes owned by someone else). A family registered
// with a nil collect emits nothing until a later registration of the name
// gives it one; after that, further registrations add nothing.
func (r *Registry) GaugeFunc(name, help string, labels []string, collect func(emit func(v float64, labelValues ...string))) {
	fc := r.family(name, "gaugefunc", labels, func() (prometheus.Collector, any) {
		fc := &funcCollector{desc: prometheus.NewDesc(name, help, labels, nil), labels: len(labels)}
		return fc, fc
	}).(*funcCollector)
	fc.mu.Lock()
	if fc.collect == nil {
		fc.collect = collect
	}
	fc.mu.Unlock()
}

// funcCollector is a GaugeFunc's family.
type funcCollector struct {
	desc   *prometheus.Desc
	labels int

	mu      sync.Mutex
	collect func(emit func(v float64, labelValues ...string))
}

func (f *funcCollector) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }

// Collect emits what collect returns; a label set emitted twice is kept
// once, since the registry refuses a scrape with duplicates.
func (f *funcCollector) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	collect := f.collect
	f.mu.Unlock()
	if collect == nil {
		return
	}
	seen := map[string]bool{}
	collect(func(v float64, values ...string) {
		if len(values) != f.labels {
			return
		}
		k := strings.Join(values, "\xff")
		if seen[k] {
			return
		}
		seen[k] = true
		ch <- prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, v, values...)
	})
}

// HistogramVec is a histogram family.
type HistogramVec struct {
	v     *prometheus.HistogramVec
	plain prometheus.Histogram
}

// Histogram is one histogram series.
type Histogram struct{ h prometheus.Histogram }

// Histogram registers (or returns) a histogram family with upper bounds
// buckets (ascending; +Inf is implied).
func (r *Registry) Histogram(name, help string, buckets []float64, labels ...string) HistogramVec {
	return r.family(name, "histogram", labels, func() (prometheus.Collector, any) {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		hv := HistogramVec{v: v}
		if len(labels) == 0 {
			hv.plain = v.WithLabelValues().(prometheus.Histogram)
		}
		return v, hv
	}).(HistogramVec)
}

// With returns the series of the label values.
func (v HistogramVec) With(values ...string) Histogram {
	if v.plain != nil && len(values) == 0 {
		return Histogram{v.plain}
	}
	return Histogram{v.v.WithLabelValues(values...).(prometheus.Histogram)}
}

// Observe records one value.
func (h Histogram) Observe(x float64) { h.h.Observe(x) }

// Count returns how many values were observed.
func (h Histogram) Count() uint64 { return read(h.h).GetHistogram().GetSampleCount() }

// read returns m's current value (tests and Value; not a hot path).
func read(m prometheus.Metric) *dto.Metric {
	var out dto.Metric
	_ = m.Write(&out)
	return &out
}

// Gather returns every family with at least one series, sorted by name.
func (r *Registry) Gather() ([]*dto.MetricFamily, error) { return r.reg.Gather() }

// Names returns the name of every registered family, the runtime's and
// process's included, whether or not it has a series yet: what a
// dashboard or an alert rule may query (a histogram's _bucket, _sum and
// _count series go by its name).
func (r *Registry) Names() []string {
	fams := r.Families()
	out := make([]string, 0, len(fams))
	for n := range fams {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Families returns the label names of every registered family, by name.
func (r *Registry) Families() map[string][]string {
	ch := make(chan *prometheus.Desc)
	go func() {
		r.reg.Describe(ch)
		close(ch)
	}()
	out := map[string][]string{}
	for d := range ch {
		name, labels := descParts(d)
		out[name] = labels
	}
	return out
}

// descParts takes the name and label names out of a Desc's String, since
// client_golang has no getters: Desc{fqName: "name", help: "…",
// constLabels: {k="v"}, variableLabels: {a,b}}.
func descParts(d *prometheus.Desc) (name string, labels []string) {
	s := d.String()
	const pre = `Desc{fqName: "`
	if !strings.HasPrefix(s, pre) {
		return "", nil
	}
	name = s[len(pre):]
	name = name[:strings.IndexByte(name, '"')]
	list := func(key string) []string {
		i := strings.LastIndex(s, key)
		if i < 0 {
			return nil
		}
		body := s[i+len(key):]
		body = body[:strings.IndexByte(body, '}')]
		if body == "" {
			return nil
		}
		return strings.Split(body, ",")
	}
	for _, c := range list("constLabels: {") {
		labels = append(labels, c[:strings.IndexByte(c, '=')])
	}
	for _, v := range list("variableLabels: {") {
		labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(v, "c("), ")"))
	}
	return name, labels
}

// Write writes every family in the Prometheus text exposition format
// (0.0.4), sorted by name.
func (r *Registry) Write(w io.Writer) error {
	mfs, err := r.reg.Gather()
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if e := enc.Encode(mf); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// Handler serves the registry (/metrics), in the format the scraper asks
// for; a collector that fails loses its own series, not the scrape.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
