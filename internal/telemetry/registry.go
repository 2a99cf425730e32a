package telemetry

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Registry holds metric families and writes them in the Prometheus text
// exposition format (version 0.0.4). It is small on purpose: counters,
// gauges, histograms with fixed buckets, and gauges read at scrape time.
// Registering a name twice returns the first family, so every processor of
// one process can ask for the same metric.
type Registry struct {
	mu       sync.Mutex
	families map[string]*family
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{families: map[string]*family{}} }

// Default is the registry every role reports to and /metrics serves.
var Default = NewRegistry()

type kind string

const (
	kindCounter   kind = "counter"
	kindGauge     kind = "gauge"
	kindHistogram kind = "histogram"
)

type family struct {
	name, help string
	kind       kind
	labels     []string
	buckets    []float64

	mu     sync.Mutex
	series map[string]*series
	// collect, when set, produces the family's series at scrape time.
	collect func(emit func(v float64, labelValues ...string))
}

type series struct {
	values []string
	bits   atomic.Uint64 // float64 of a counter or gauge

	mu     sync.Mutex // histogram fields
	counts []uint64
	sum    float64
	count  uint64
}

func (r *Registry) family(name, help string, k kind, labels []string, buckets []float64) *family {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.families[name]; ok {
		if f.kind != k || !slices.Equal(f.labels, labels) {
			panic(fmt.Sprintf("telemetry: metric %s registered twice with different kinds or labels", name))
		}
		return f
	}
	f := &family{name: name, help: help, kind: k, labels: labels, buckets: buckets, series: map[string]*series{}}
	r.families[name] = f
	return f
}

func (f *family) with(values []string) *series {
	if len(values) != len(f.labels) {
		panic(fmt.Sprintf("telemetry: metric %s wants %d label values, got %d", f.name, len(f.labels), len(values)))
	}
	key := strings.Join(values, "\xff")
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.series[key]
	if !ok {
		s = &series{values: slices.Clone(values)}
		if f.kind == kindHistogram {
			s.counts = make([]uint64, len(f.buckets))
		}
		f.series[key] = s
	}
	return s
}

// CounterVec is a counter family.
type CounterVec struct{ f *family }

// Counter is one counter series.
type Counter struct{ s *series }

// Counter registers (or returns) a counter family.
func (r *Registry) Counter(name, help string, labels ...string) CounterVec {
	return CounterVec{r.family(name, help, kindCounter, labels, nil)}
}

// With returns the series of the label values, in the family's label order.
func (v CounterVec) With(values ...string) Counter { return Counter{v.f.with(values)} }

// Add adds d (≥ 0) to the counter.
func (c Counter) Add(d float64) { addFloat(&c.s.bits, d) }

// Inc adds one.
func (c Counter) Inc() { c.Add(1) }

// Value returns the counter's value.
func (c Counter) Value() float64 { return math.Float64frombits(c.s.bits.Load()) }

// GaugeVec is a gauge family.
type GaugeVec struct{ f *family }

// Gauge is one gauge series.
type Gauge struct{ s *series }

// Gauge registers (or returns) a gauge family.
func (r *Registry) Gauge(name, help string, labels ...string) GaugeVec {
	return GaugeVec{r.family(name, help, kindGauge, labels, nil)}
}

// With returns the series of the label values.
func (v GaugeVec) With(values ...string) Gauge { return Gauge{v.f.with(values)} }

// Set sets the gauge.
func (g Gauge) Set(x float64) { g.s.bits.Store(math.Float64bits(x)) }

// Add adds d (may be negative).
func (g Gauge) Add(d float64) { addFloat(&g.s.bits, d) }

// Value returns the gauge's value.
func (g Gauge) Value() float64 { return math.Float64frombits(g.s.bits.Load()) }

// GaugeFunc registers a gauge family whose series collect returns at each
// scrape (consumer lag, sizes owned by someone else). A second registration
// of the name adds nothing.
func (r *Registry) GaugeFunc(name, help string, labels []string, collect func(emit func(v float64, labelValues ...string))) {
	f := r.family(name, help, kindGauge, labels, nil)
	f.mu.Lock()
	if f.collect == nil {
		f.collect = collect
	}
	f.mu.Unlock()
}

// HistogramVec is a histogram family.
type HistogramVec struct{ f *family }

// Histogram is one histogram series.
type Histogram struct {
	s       *series
	buckets []float64
}

// Histogram registers (or returns) a histogram family with upper bounds
// buckets (ascending; +Inf is implied).
func (r *Registry) Histogram(name, help string, buckets []float64, labels ...string) HistogramVec {
	return HistogramVec{r.family(name, help, kindHistogram, labels, buckets)}
}

// With returns the series of the label values.
func (v HistogramVec) With(values ...string) Histogram {
	return Histogram{v.f.with(values), v.f.buckets}
}

// Observe records one value.
func (h Histogram) Observe(x float64) {
	i := sort.SearchFloat64s(h.buckets, x) // first bucket with bound ≥ x
	h.s.mu.Lock()
	if i < len(h.s.counts) {
		h.s.counts[i]++
	}
	h.s.sum += x
	h.s.count++
	h.s.mu.Unlock()
}

// Count returns how many values were observed.
func (h Histogram) Count() uint64 {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.s.count
}

func addFloat(bits *atomic.Uint64, d float64) {
	for {
		old := bits.Load()
		if bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// Write writes every family in the text exposition format, sorted by name.
func (r *Registry) Write(w io.Writer) error {
	r.mu.Lock()
	fams := make([]*family, 0, len(r.families))
	for _, f := range r.families {
		fams = append(fams, f)
	}
	r.mu.Unlock()
	sort.Slice(fams, func(i, j int) bool { return fams[i].name < fams[j].name })
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		f.write(bw)
	}
	return bw.Flush()
}

func (f *family) write(w *bufio.Writer) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.kind)
	f.mu.Lock()
	collect := f.collect
	all := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		all = append(all, s)
	}
	f.mu.Unlock()
	if collect != nil {
		collect(func(v float64, values ...string) {
			if len(values) == len(f.labels) {
				fmt.Fprintf(w, "%s%s %s\n", f.name, labelText(f.labels, values, "", ""), formatFloat(v))
			}
		})
	}
	sort.Slice(all, func(i, j int) bool { return strings.Join(all[i].values, "\xff") < strings.Join(all[j].values, "\xff") })
	for _, s := range all {
		if f.kind != kindHistogram {
			fmt.Fprintf(w, "%s%s %s\n", f.name, labelText(f.labels, s.values, "", ""), formatFloat(math.Float64frombits(s.bits.Load())))
			continue
		}
		s.mu.Lock()
		var cum uint64
		for i, b := range f.buckets {
			cum += s.counts[i]
			fmt.Fprintf(w, "%s_bucket%s %d\n", f.name, labelText(f.labels, s.values, "le", formatFloat(b)), cum)
		}
		fmt.Fprintf(w, "%s_bucket%s %d\n", f.name, labelText(f.labels, s.values, "le", "+Inf"), s.count)
		fmt.Fprintf(w, "%s_sum%s %s\n", f.name, labelText(f.labels, s.values, "", ""), formatFloat(s.sum))
		fmt.Fprintf(w, "%s_count%s %d\n", f.name, labelText(f.labels, s.values, "", ""), s.count)
		s.mu.Unlock()
	}
}

func labelText(names, values []string, extraName, extraValue string) string {
	if len(names) == 0 && extraName == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=\"%s\"", n, escapeValue(values[i]))
	}
	if extraName != "" {
		if len(names) > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=\"%s\"", extraName, extraValue)
	}
	b.WriteByte('}')
	return b.String()
}

var valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func escapeValue(s string) string { return valueEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
