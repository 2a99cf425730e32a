package scenario

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const file = `# a comment before the first case
config ping=60s

step 1s Deploy name="web 1" zone=z1
----
out one
  out two

# nothing expected
tick 5s
----

state
----
`

func TestParse(t *testing.T) {
	cases, err := parse("f.txt", strings.Split(file, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Pos, Cmd string
		Args     []string
		Want     []string
	}
	var got []view
	for _, c := range cases {
		got = append(got, view{c.Pos, c.Cmd, c.Args, c.Want})
	}
	want := []view{
		{"f.txt:2", "config", []string{"ping=60s"}, nil},
		{"f.txt:4", "step", []string{"1s", "Deploy", `name="web 1"`, "zone=z1"}, []string{"out one", "out two"}},
		{"f.txt:10", "tick", []string{"5s"}, nil},
		{"f.txt:13", "state", []string{}, nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cases\n got %+v\nwant %+v", got, want)
	}
	if _, err := parse("f.txt", []string{"", "----", "x"}); err == nil {
		t.Fatal("a ---- with no directive parsed")
	}
}

// TestRewrite checks that rewriting with the expected outputs gives the
// file back, and that new outputs replace the old ones in place.
func TestRewrite(t *testing.T) {
	lines := strings.Split(file, "\n")
	cases, _ := parse("f.txt", lines)
	same := make([][]string, len(cases))
	for i, c := range cases {
		same[i] = c.Want
	}
	if got := rewrite(lines, cases, same); got != strings.Replace(file, "  out two", "out two", 1) {
		t.Fatalf("rewritten with its own outputs:\n%s", got)
	}
	got := rewrite(lines, cases, [][]string{{"set"}, nil, {"fired"}, {"s"}})
	want := `# a comment before the first case
config ping=60s
----
set

step 1s Deploy name="web 1" zone=z1
----

# nothing expected
tick 5s
----
fired

state
----
s
`
	if got != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	// A directive with no ---- that gains outputs keeps the next directive
	// apart with a blank line.
	lines = []string{"a", "b", "----", ""}
	cases, _ = parse("g.txt", lines)
	if got := rewrite(lines, cases, [][]string{{"x"}, nil}); got != "a\n----\nx\n\nb\n----\n" {
		t.Fatalf("rewritten: %q", got)
	}
}

func TestRunFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	var played []string
	RunFile(t, path, func(c Case) []string {
		played = append(played, c.Cmd)
		return c.Want
	})
	if strings.Join(played, " ") != "config step tick state" {
		t.Fatalf("played %q", played)
	}
}

func TestFields(t *testing.T) {
	for line, want := range map[string][]string{
		`a  b`:                 {"a", "b"},
		`k="x y" z`:            {`k="x y"`, "z"},
		`k="say \"hi there\""`: {`k="say \"hi there\""`},
		"a\tb":                 {"a", "b"},
	} {
		if got := Fields(line); !reflect.DeepEqual(got, want) {
			t.Errorf("Fields(%q) = %q, want %q", line, got, want)
		}
	}
}
