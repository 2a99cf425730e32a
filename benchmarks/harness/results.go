package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Machine describes where a run happened, so that runs compare.
type Machine struct {
	Cores       int    `json:"cores"`
	MemoryMiB   int64  `json:"memory_mib"`
	CPU         string `json:"cpu"`
	Go          string `json:"go"`
	FranzGo     string `json:"franz_go"`
	Kfake       string `json:"kfake"`
	Postgres    string `json:"postgres"`
	ClickHouse  string `json:"clickhouse"`
	Commit      string `json:"commit"`
	DirtyTree   bool   `json:"dirty_tree"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	Kernel      string `json:"kernel"`
	Description string `json:"description,omitempty"`
	// Probe is the machine's speed at fresh memory and loopback round
	// trips, taken before the scenarios (absent in older results).
	Probe Probe `json:"probe"`
}

// Run is one harness run: the machine, the mode and the rows.
type Run struct {
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Quick    bool          `json:"quick"`
	Machine  Machine       `json:"machine"`
	Rows     []Row         `json:"rows"`
}

// Describe reads the machine; postgres and clickhouse are the versions the
// scenarios found (empty when none ran).
func Describe(postgres, clickhouse string) Machine {
	m := Machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(),
		Postgres: postgres, ClickHouse: clickhouse}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/twmb/franz-go":
				m.FranzGo = d.Version
			case "github.com/twmb/franz-go/pkg/kfake":
				m.Kfake = d.Version
			}
		}
	}
	m.MemoryMiB = memTotalMiB()
	m.CPU = cpuModel()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		m.DirtyTree = len(bytes.TrimSpace(out)) > 0
	}
	return m
}

func memTotalMiB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb int64
		if _, err := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); err == nil {
			return kb / 1024
		}
	}
	return 0
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Write stores the run as dir/<date>-<commit>[-quick].json and returns the path.
func Write(dir string, r Run) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("results dir: %w", err)
	}
	name := r.Started.UTC().Format("2006-01-02") + "-" + orUnknown(r.Machine.Commit)
	if r.Machine.DirtyTree {
		name += "-dirty"
	}
	if r.Quick {
		name += "-quick"
	}
	path := filepath.Join(dir, name+".json")
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	return path, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// historyMarker ends the history table in README.md; rows go above it.
const historyMarker = "<!-- history: new rows above this line -->"

// AppendHistory adds one row for the run to the history table of readme
// (a markdown file holding historyMarker): date, commit, mode, machine,
// versions, then each row's median and verdict.
func AppendHistory(readme string, r Run, results string) error {
	b, err := os.ReadFile(readme)
	if err != nil {
		return fmt.Errorf("read %s: %w", readme, err)
	}
	i := bytes.Index(b, []byte(historyMarker))
	if i < 0 {
		return fmt.Errorf("%s has no history marker %q", readme, historyMarker)
	}
	m := r.Machine
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	var figs []string
	for _, row := range r.Rows {
		v := "FAIL"
		if row.Pass {
			v = "pass"
		}
		if row.Err != "" {
			figs = append(figs, fmt.Sprintf("%s %s: error (%s)", row.Scenario, row.Figure, v))
			continue
		}
		figs = append(figs, fmt.Sprintf("%s %s: %s %s (%s)", row.Scenario, row.Figure, trim(row.Value.Median), row.Unit, v))
	}
	commit := orUnknown(m.Commit)
	if m.DirtyTree {
		commit += "+dirty"
	}
	machine := fmt.Sprintf("%d cores, %d MiB", m.Cores, m.MemoryMiB)
	if m.Probe.FreshMemoryMiBps > 0 {
		machine += "; " + m.Probe.String()
	}
	line := fmt.Sprintf("| %s | %s | %s | %s | Go %s, franz-go %s, Postgres %s, ClickHouse %s | %s | [json](%s) |\n",
		r.Started.UTC().Format("2006-01-02 15:04"), commit, mode, machine,
		strings.TrimPrefix(m.Go, "go"), m.FranzGo, orNone(m.Postgres), orNone(m.ClickHouse),
		strings.Join(figs, "; "), results)
	out := append(append(append([]byte{}, b[:i]...), line...), b[i:]...)
	return os.WriteFile(readme, out, 0o644)
}

func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
