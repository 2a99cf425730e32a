// Package harness is the frame of `make bench`: a scenario returns rows
// (a figure with the limit it is compared with, both measured in the same
// run, and the target), and the harness summarizes repeated runs (median,
// min, max), prints the table, writes benchmarks/results/<date>-<commit>.json
// and appends the run to the history table of benchmarks/README.md.
//
// It measures nothing of vmplane and knows no scenario: the scenarios say
// how they measured in each row's How. Of the machine it records the
// description and a probe of two speeds that vary from one day's box to the
// next (probe.go).
package harness

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Stat summarizes the samples of one figure over repeated runs.
type Stat struct {
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Samples []float64 `json:"samples"`
}

// Summarize returns the median, min and max of samples (all zero for none).
func Summarize(samples []float64) Stat {
	if len(samples) == 0 {
		return Stat{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: med, Min: s[0], Max: s[len(s)-1], Samples: samples}
}

// Target is the bar a figure must reach: at least (or at most) Value.
type Target struct {
	AtLeast bool    `json:"at_least"`
	Value   float64 `json:"value"`
	// OfLimit makes Value a fraction of the limit's median rather than an
	// absolute figure (e.g. ≥ 25 % of the null-Step rate).
	OfLimit bool `json:"of_limit"`
}

func (t Target) String(unit string) string {
	op := "≤"
	if t.AtLeast {
		op = "≥"
	}
	if t.OfLimit {
		return fmt.Sprintf("%s %s of limit", op, trim(t.Value*100)+"%")
	}
	return fmt.Sprintf("%s %s %s", op, trim(t.Value), unit)
}

// Row is one line of the table.
type Row struct {
	Scenario string `json:"scenario"`
	Figure   string `json:"figure"`
	Unit     string `json:"unit"`
	Value    Stat   `json:"value"`
	// Limit is what the figure is compared with, measured in the same run;
	// empty LimitName for none.
	LimitName string  `json:"limit_name,omitempty"`
	Limit     Stat    `json:"limit"`
	Target    *Target `json:"target,omitempty"`
	// Pass is set by Judge.
	Pass bool `json:"pass"`
	// Err says why the scenario produced no figure; the row then fails.
	Err string `json:"error,omitempty"`
	// How says what was timed, from which event to which.
	How string `json:"how"`
	// Notes carry what explains the figure (a profile's top, a reason).
	Notes string `json:"notes,omitempty"`
}

// Ratio is the figure's median over the limit's median (0 without a limit).
func (r Row) Ratio() float64 {
	if r.LimitName == "" || r.Limit.Median == 0 {
		return 0
	}
	return r.Value.Median / r.Limit.Median
}

// Judge sets Pass from the median and the target; a row without a target
// passes when it has a figure.
func (r *Row) Judge() {
	if r.Err != "" {
		r.Pass = false
		return
	}
	if r.Target == nil {
		r.Pass = true
		return
	}
	v, bar := r.Value.Median, r.Target.Value
	if r.Target.OfLimit {
		v = r.Ratio()
	}
	if r.Target.AtLeast {
		r.Pass = v >= bar
	} else {
		r.Pass = v <= bar
	}
}

// Print writes the table.
func Print(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tfigure\tmedian [min..max]\tlimit\tratio\ttarget\tresult")
	for _, r := range rows {
		fig := fmt.Sprintf("%s %s [%s..%s] (n=%d)", trim(r.Value.Median), r.Unit, trim(r.Value.Min), trim(r.Value.Max), len(r.Value.Samples))
		lim, ratio := "—", "—"
		if r.LimitName != "" {
			lim = fmt.Sprintf("%s: %s [%s..%s]", r.LimitName, trim(r.Limit.Median), trim(r.Limit.Min), trim(r.Limit.Max))
			ratio = fmt.Sprintf("%.2f", r.Ratio())
		}
		tgt := "—"
		if r.Target != nil {
			tgt = r.Target.String(r.Unit)
		}
		res := "PASS"
		if !r.Pass {
			res = "FAIL"
		}
		if r.Err != "" {
			fig, res = "error: "+r.Err, "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Scenario, r.Figure, fig, lim, ratio, tgt, res)
	}
	// Like the Fprintf calls: a table for a terminal, where an error has
	// nowhere to go.
	_ = tw.Flush()
	fmt.Fprintln(w, "\nhow each figure was measured:")
	for _, r := range rows {
		fmt.Fprintf(w, "- %s / %s: %s\n", r.Scenario, r.Figure, r.How)
		if r.Notes != "" {
			fmt.Fprintf(w, "  notes: %s\n", strings.ReplaceAll(r.Notes, "\n", "\n  "))
		}
	}
}

// trim formats a figure with three significant digits, without exponent.
func trim(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
