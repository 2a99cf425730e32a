package sim

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var (
	// 2,000 seeds by default (under a minute on two cores); 100,000 is a
	// long search.
	seeds = flag.Int("seeds", 2000, "how many seeds TestSeeds plays (100000 for a long search)")
	first = flag.Uint64("first-seed", 1, "the first seed TestSeeds plays")
	seed  = flag.Uint64("seed", 0, "the seed TestSeed replays, with its trace under -v")
	// -family narrows TestSeeds and TestSeed to one family; TestFamilies
	// plays -family-seeds of each.
	family      = flag.String("family", "", "the seed family TestSeeds and TestSeed play (family.go); empty is the mix")
	familySeeds = flag.Int("family-seeds", 100, "how many seeds of each family TestFamilies plays")
)

// TestSeeds plays many seeds on every core and fails with the first
// broken invariant of each failing seed.
func TestSeeds(t *testing.T) {
	n := *seeds
	switch {
	case flagSet("seeds"):
	case raceOn:
		n = min(n, 16)
	case testing.Short():
		n = min(n, 200)
	}
	sum := play(t, *family, *first, n)
	sum.log(t)
}

// rotation is the family seed s plays when none is asked for: the mix
// and each family in turn, so that every race gets its share of seeds.
func rotation(s uint64) string {
	all := append([]string{""}, Families()...)
	return all[s%uint64(len(all))]
}

// summary adds up the results of many seeds.
type summaryOf struct {
	n, steps               int
	first                  uint64
	checks, faults, ending map[string]int
	failed                 []Result
}

// play runs n seeds from first on every core.
func play(t *testing.T, family string, first uint64, n int) *summaryOf {
	sum := &summaryOf{n: n, first: first, checks: map[string]int{}, faults: map[string]int{}, ending: map[string]int{}}
	jobs := make(chan uint64)
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for s := range jobs {
				f := family
				if f == "" {
					f = rotation(s)
				}
				r := Run(Options{Seed: s, Family: f})
				mu.Lock()
				sum.add(r)
				mu.Unlock()
			}
		})
	}
	for s := first; s < first+uint64(n); s++ {
		jobs <- s
	}
	close(jobs)
	wg.Wait()
	return sum
}

func (sum *summaryOf) add(r Result) {
	sum.steps += r.Steps
	for k, v := range r.Checks {
		sum.checks[k] += v
	}
	for k, v := range r.Faults {
		sum.faults[k] += v
	}
	for k, v := range r.Jobs {
		sum.ending[k] += v
	}
	if r.Err != nil {
		sum.failed = append(sum.failed, r)
	}
}

// log writes what the seeds checked and fails the test with the first
// broken invariants.
func (sum *summaryOf) log(t *testing.T) {
	t.Helper()
	t.Logf("%d seeds from %d, %d steps", sum.n, sum.first, sum.steps)
	t.Logf("invariants checked: %s", counts(sum.checks))
	t.Logf("faults injected: %s", counts(sum.faults))
	t.Logf("jobs ended: %s", counts(sum.ending))
	failed := sum.failed
	slices.SortFunc(failed, func(a, b Result) int { return int(a.Seed) - int(b.Seed) })
	for _, r := range failed {
		t.Logf("failing: %s", strings.SplitN(r.Err.Error(), "\n", 2)[0])
	}
	for i, r := range failed {
		if i == 3 {
			t.Errorf("… and %d more failing seeds", len(failed)-3)
			break
		}
		t.Error(r.Err)
	}
}

// TestSeed replays one seed (-seed N), with every step under -v.
func TestSeed(t *testing.T) {
	if *seed == 0 {
		t.Skip("give -seed N to replay one seed")
	}
	o := Options{Seed: *seed, Family: *family}
	if testing.Verbose() {
		o.Trace = os.Stdout
	}
	r := Run(o)
	t.Logf("seed %d: %d steps; invariants checked: %s", r.Seed, r.Steps, counts(r.Checks))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
}

// TestRegressions replays every seed that once broke an invariant
// (testdata/regressions.txt).
func TestRegressions(t *testing.T) {
	data, err := os.ReadFile("testdata/regressions.txt")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		s, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			t.Fatalf("regressions.txt: %q is no seed", f[0])
		}
		fam, why := "", f[1:]
		if len(why) > 0 && strings.HasPrefix(why[0], "family=") {
			fam, why = strings.TrimPrefix(why[0], "family="), why[1:]
		}
		t.Run("seed"+f[0]+fam, func(t *testing.T) {
			t.Parallel()
			if r := Run(Options{Seed: s, Family: fam}); r.Err != nil {
				t.Fatalf("once: %s\nnow: %v", strings.Join(why, " "), r.Err)
			}
		})
	}
}

// TestDeterministic: a seed played twice gives the same run, step for step.
func TestDeterministic(t *testing.T) {
	for _, s := range []uint64{1, 2, 3} {
		var a, b strings.Builder
		ra, rb := Run(Options{Seed: s, Trace: &a}), Run(Options{Seed: s, Trace: &b})
		if a.String() != b.String() || ra.Steps != rb.Steps {
			t.Fatalf("seed %d played twice differs: %d and %d steps, traces of %d and %d bytes", s, ra.Steps, rb.Steps, a.Len(), b.Len())
		}
	}
}

// flagSet says whether a flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
