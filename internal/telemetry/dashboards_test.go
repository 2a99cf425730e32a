package telemetry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The Grafana dashboards (ops/deploy/grafana) and the Prometheus alert
// rules (ops/deploy/prometheus) query what this package registers: these
// tests hold every metric and label they name to Default's families, so
// a renamed metric fails here rather than on an operator's empty panel.
// promtool checks the rules' syntax and runs their unit tests (make check).

const (
	grafanaDir    = "../../ops/deploy/grafana"
	prometheusDir = "../../ops/deploy/prometheus"
)

// scrapeLabels are the labels Prometheus adds to every series it scrapes;
// up is the series it writes per target.
var scrapeLabels = []string{"job", "instance"}

// selector is a metric named in a query, with the labels it matches on.
type selector struct {
	metric string
	labels []string
}

// aggregations and keywords are PromQL words that are not metric names.
var (
	aggregations = []string{"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
		"bottomk", "topk", "quantile", "limitk", "limit_ratio"}
	keywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
		"group_left", "group_right", "inf", "nan", "start", "end"}
	// listKeywords take a parenthesised list of label names.
	listKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}
)

// selectors returns the metrics expr names, with their matchers' label
// names. It reads the PromQL that dashboards and rules are written in:
// strings, ranges, numbers, durations, Grafana's $variables, function
// calls and label lists are skipped.
func selectors(expr string) ([]selector, error) {
	var out []selector
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
	}
	skipSpace := func(i int) int {
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\n' || expr[i] == '\t') {
			i++
		}
		return i
	}
	// closing returns the index after the close that ends the open at i,
	// past the strings in between (a matcher's "/v1/jobs/{id}").
	closing := func(i int, open, close byte) (int, error) {
		for j := i + 1; j < len(expr); j++ {
			switch expr[j] {
			case close:
				return j + 1, nil
			case '"', '\'':
				q := expr[j]
				for j++; j < len(expr) && expr[j] != q; j++ {
					if expr[j] == '\\' {
						j++
					}
				}
			}
		}
		return 0, fmt.Errorf("%q: %c at %d is not closed", expr, open, i)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("%q: string at %d is not closed", expr, i)
			}
			i = j + 1
		case c == '[':
			j, err := closing(i, '[', ']')
			if err != nil {
				return nil, err
			}
			i = j
		case c == '{': // a selector without a name ({__name__=~"..."})
			j, err := closing(i, '{', '}')
			if err != nil {
				return nil, err
			}
			i = j
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				j, err := closing(i, '{', '}')
				if err != nil {
					return nil, err
				}
				i = j
				continue
			}
			for i < len(expr) && isIdent(expr[i], false) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i], false) || expr[i] == '.') {
				i++
			}
		case isIdent(c, true):
			j := i
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			word := expr[i:j]
			next := skipSpace(j)
			switch {
			case slices.Contains(listKeywords, word) && next < len(expr) && expr[next] == '(':
				k, err := closing(next, '(', ')')
				if err != nil {
					return nil, err
				}
				i = k
			case next < len(expr) && expr[next] == '(', slices.Contains(aggregations, word), slices.Contains(keywords, word):
				i = j
			case next < len(expr) && expr[next] == '{':
				k, err := closing(next, '{', '}')
				if err != nil {
					return nil, err
				}
				labels, err := matcherLabels(expr[next+1 : k-1])
				if err != nil {
					return nil, fmt.Errorf("%q: %w", expr, err)
				}
				out = append(out, selector{word, labels})
				i = k
			default:
				out = append(out, selector{metric: word})
				i = j
			}
		default:
			i++
		}
	}
	return out, nil
}

var matcher = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*(,|$)`)

// matcherLabels returns the label names of a selector's matchers
// (`a="x", b=~"y"`).
func matcherLabels(body string) ([]string, error) {
	var out []string
	for strings.TrimSpace(body) != "" {
		g := matcher.FindStringSubmatch(body)
		if g == nil {
			return nil, fmt.Errorf("matcher %q", body)
		}
		out = append(out, g[1])
		body = body[len(g[0]):]
	}
	return out, nil
}

// checkSelectors reports the metrics expr names that Default does not
// register, and the labels it matches that those metrics do not have.
func checkSelectors(expr string, families map[string][]string) []error {
	sels, err := selectors(expr)
	if err != nil {
		return []error{err}
	}
	if len(sels) == 0 && !strings.Contains(expr, "time()") && !strings.Contains(expr, "vector(") {
		return []error{fmt.Errorf("%q names no metric", expr)}
	}
	var errs []error
	for _, s := range sels {
		labels, ok := families[s.metric]
		extra := []string{"__name__"}
		if !ok {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base, cut := strings.CutSuffix(s.metric, suffix)
				if l, found := families[base]; cut && found {
					labels, ok = l, true
					if suffix == "_bucket" {
						extra = append(extra, "le")
					}
				}
			}
		}
		if s.metric == "up" {
			ok = true
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%q: vmplane registers no metric %s", expr, s.metric))
			continue
		}
		if strings.HasPrefix(s.metric, "go_gc_duration_seconds") {
			extra = append(extra, "quantile") // a summary
		}
		for _, l := range s.labels {
			if !slices.Contains(labels, l) && !slices.Contains(scrapeLabels, l) && !slices.Contains(extra, l) {
				errs = append(errs, fmt.Errorf("%q: %s has no label %s (it has %v)", expr, s.metric, l, labels))
			}
		}
	}
	return errs
}

func TestSelectors(t *testing.T) {
	for expr, want := range map[string][]selector{
		`sum by (consumergroup) (kafka_consumergroup_lag{consumergroup=~"$group"}) > 10000`: {
			{"kafka_consumergroup_lag", []string{"consumergroup"}}},
		`histogram_quantile(0.99, sum by (le, route) (rate(vmplane_http_request_seconds_bucket{route!~"/v1/(a|b)"}[$__rate_interval])))`: {
			{"vmplane_http_request_seconds_bucket", []string{"route"}}},
		`x_total offset 5m / on (a) group_left (b) y unless ignoring(c) z{d='e,f'} and time() - w > 1e3`: {
			{"x_total", nil}, {"y", nil}, {"z", []string{"d"}}, {"w", nil}},
		`label_replace(sum(rate(q[10m])) > 0, "consumergroup", "$1", "consumer", "(.*)")`: {{"q", nil}},
		`rate(r_total{route="/v1/jobs/{id}",code=~"5.."}[5m])`:                            {{"r_total", []string{"route", "code"}}},
		`max(count by (version) (go_build_info{job=~"vmplane.*",instance=~"${instance}"}))`: {
			{"go_build_info", []string{"job", "instance"}}},
	} {
		got, err := selectors(expr)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %v\nwant %v", expr, got, want)
		}
	}
	fams := map[string][]string{"m_seconds": {"route"}}
	for expr, bad := range map[string]string{
		`rate(m_seconds_bucket{route="x",le="1"}[5m])`: "",
		`rate(m_seconds_count{code="x"}[5m])`:          "has no label code",
		`rate(n_total[5m])`:                            "no metric n_total",
		`sum(`:                                         "names no metric",
	} {
		errs := checkSelectors(expr, fams)
		switch {
		case bad == "" && len(errs) > 0:
			t.Errorf("%s: %v", expr, errs)
		case bad != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), bad)):
			t.Errorf("%s: %v, want %q", expr, errs, bad)
		}
	}
}

// dashboard is the part of Grafana's dashboard model the lint reads.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// TestDashboards lints every dashboard: it loads as Grafana's model, has
// a uid and title, panels with unique ids, a place on the grid, a
// datasource and queries; and every query (template variables' too) names
// metrics and labels vmplane registers.
func TestDashboards(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(grafanaDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s: %v", grafanaDir, err)
	}
	families := Default.Families()
	uids := map[string]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		if err := dec.Decode(&d); err != nil {
			t.Errorf("%s: not a dashboard: %v", f, err)
			continue
		}
		name := filepath.Base(f)
		if d.UID == "" || len(d.UID) > 40 || d.Title == "" || d.SchemaVersion == 0 {
			t.Errorf("%s: uid %q (1 to 40 characters), title %q, schemaVersion %d: all required", name, d.UID, d.Title, d.SchemaVersion)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %s", other, name, d.UID)
		}
		uids[d.UID] = name
		vars := map[string]bool{}
		for _, v := range d.Templating.List {
			if vars[v.Name] {
				t.Errorf("%s: variable %s twice", name, v.Name)
			}
			vars[v.Name] = true
			if v.Type != "query" {
				continue
			}
			var q struct{ Query string }
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Errorf("%s: variable %s: query %s", name, v.Name, v.Query)
				continue
			}
			m := labelValues.FindStringSubmatch(q.Query)
			if m == nil {
				t.Errorf("%s: variable %s: %q is not label_values(selector, label)", name, v.Name, q.Query)
				continue
			}
			for _, err := range checkSelectors(m[1]+`{`+m[2]+`=""}`, families) {
				t.Errorf("%s: variable %s: %v", name, v.Name, err)
			}
		}
		ids := map[int]bool{}
		var walk func([]panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				where := fmt.Sprintf("%s: panel %d %q", name, p.ID, p.Title)
				if p.ID <= 0 || ids[p.ID] {
					t.Errorf("%s: id missing or not unique", where)
				}
				ids[p.ID] = true
				if p.Type == "" || p.Title == "" {
					t.Errorf("%s: type and title required", where)
				}
				if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
					t.Errorf("%s: gridPos %+v off the 24-column grid", where, g)
				}
				walk(p.Panels)
				if p.Type == "row" {
					continue
				}
				checkDatasource(t, where, p.Datasource, vars)
				if len(p.Targets) == 0 {
					t.Errorf("%s: no targets", where)
				}
				refs := map[string]bool{}
				for _, tg := range p.Targets {
					if tg.RefID == "" || refs[tg.RefID] || tg.Expr == "" {
						t.Errorf("%s: target %q: a unique refId and an expr required", where, tg.RefID)
					}
					refs[tg.RefID] = true
					for _, err := range checkSelectors(tg.Expr, families) {
						t.Errorf("%s: %v", where, err)
					}
				}
			}
		}
		walk(d.Panels)
	}
}

// checkDatasource holds a panel to a Prometheus datasource, by a uid or
// a dashboard variable the dashboard has.
func checkDatasource(t *testing.T, where string, raw json.RawMessage, vars map[string]bool) {
	t.Helper()
	var ds struct{ Type, UID string }
	if err := json.Unmarshal(raw, &ds); err != nil || ds.Type != "prometheus" || ds.UID == "" {
		t.Errorf("%s: datasource %s: want {type: prometheus, uid: ...}", where, raw)
		return
	}
	if v, ok := strings.CutPrefix(ds.UID, "${"); ok && !vars[strings.TrimSuffix(v, "}")] {
		t.Errorf("%s: datasource %s names no variable of the dashboard", where, ds.UID)
	}
}

// TestAlertRules holds every alert rule to a name, a severity and a
// summary, and its expression to metrics and labels vmplane registers
// (or up, the series Prometheus writes per target).
func TestAlertRules(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(prometheusDir, "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	families := Default.Families()
	rules := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".test.yml") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Groups []struct {
				Name  string
				Rules []struct {
					Alert, Record, Expr string
					Labels              map[string]string
					Annotations         map[string]string
				}
			}
		}
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range doc.Groups {
			for _, r := range g.Rules {
				rules++
				where := fmt.Sprintf("%s: %s %s", filepath.Base(f), g.Name, r.Alert+r.Record)
				if r.Alert != "" && (r.Labels["severity"] == "" || r.Annotations["summary"] == "") {
					t.Errorf("%s: an alert needs labels.severity and annotations.summary", where)
				}
				for _, err := range checkSelectors(r.Expr, families) {
					t.Errorf("%s: %v", where, err)
				}
			}
		}
	}
	if rules == 0 {
		t.Fatalf("no rules in %s", prometheusDir)
	}
}
