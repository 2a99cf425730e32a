// Package scenario plays the scenario files of the pure processors' tests,
// in the manner of etcd raft's data-driven tests: a file is a list of
// cases, each a directive line, then "----" and the output lines the
// directive must produce, up to a blank line. A case that expects no
// output may leave out the "----". Lines starting with # between cases,
// and blank lines, are comments.
//
// The package owns the files' syntax, the comparison and the rewrite of
// expected outputs (go test -update); what a directive means and how an
// output prints belong to each processor's tests, in the step function
// they hand to Run. Only tests import it.
package scenario

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected outputs of the scenario files; review the diff before keeping it")

// Case is one directive of a scenario file and the output it expects.
type Case struct {
	// Pos is file:line of the directive, for messages.
	Pos string
	// Directive is the directive line without the space around it.
	Directive string
	// Cmd is the directive's first word and Args the words after it; a
	// word with a "quoted part" (k="a b") stays one word, quotes and all.
	Cmd  string
	Args []string
	// Want are the expected output lines, without the space around them.
	Want []string

	sep        bool // a ---- line follows the directive
	start, end int  // the case's lines in the file, [start, end)
}

// Step plays one case and returns the output lines it produced. It may
// end the test (t.Fatal) on a directive it cannot play.
type Step func(c Case) []string

// Run plays every file that pattern matches, each in a subtest named after
// the file without its extension, with the Step that start returns for it:
// each file begins from a fresh machine.
func Run(t *testing.T, pattern string, start func(t *testing.T) Step) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files match %s: %v", pattern, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), func(t *testing.T) {
			RunFile(t, f, start(t))
		})
	}
}

// RunFile plays the cases of one file in order. Each case's output must be
// its expected lines; with -update the file is rewritten with the outputs
// instead, its comments and blank lines kept.
func RunFile(t *testing.T, path string, step Step) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	cases, err := parse(path, lines)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]string, len(cases))
	for i, c := range cases {
		got[i] = step(c)
		if *update {
			continue
		}
		if g, w := strings.Join(got[i], "\n"), strings.Join(c.Want, "\n"); g != w {
			t.Errorf("%s: %s\n got:\n  %s\nwant:\n  %s", c.Pos, c.Directive,
				strings.Join(got[i], "\n  "), strings.Join(c.Want, "\n  "))
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(rewrite(lines, cases, got)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parse finds the cases among a file's lines.
func parse(path string, lines []string) ([]Case, error) {
	var cases []Case
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if l == "----" {
			return nil, fmt.Errorf("%s:%d: ---- with no directive before it", path, i+1)
		}
		words := Fields(l)
		c := Case{Pos: fmt.Sprintf("%s:%d", path, i+1), Directive: l, Cmd: words[0], Args: words[1:], start: i, end: i + 1}
		if c.end < len(lines) && strings.TrimSpace(lines[c.end]) == "----" {
			c.sep = true
			for c.end++; c.end < len(lines) && strings.TrimSpace(lines[c.end]) != ""; c.end++ {
				c.Want = append(c.Want, strings.TrimSpace(lines[c.end]))
			}
		}
		cases = append(cases, c)
		i = c.end - 1
	}
	return cases, nil
}

// rewrite is the file with each case's expected lines replaced by what it
// produced; every line outside the cases stays as it was.
func rewrite(lines []string, cases []Case, got [][]string) string {
	var out []string
	next := 0
	for i, c := range cases {
		out = append(out, lines[next:c.start+1]...)
		next = c.end
		if !c.sep && len(got[i]) == 0 {
			continue
		}
		out = append(out, "----")
		out = append(out, got[i]...)
		if !c.sep && next < len(lines) && strings.TrimSpace(lines[next]) != "" {
			out = append(out, "") // the next directive followed at once
		}
	}
	return strings.Join(append(out, lines[next:]...), "\n")
}

// Fields splits a directive on spaces, keeping a double-quoted part (with
// its backslash escapes) inside one word.
func Fields(line string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '"':
			quoted = !quoted
			cur.WriteByte(c)
		case c == '\\' && quoted && i+1 < len(line):
			cur.WriteByte(c)
			i++
			cur.WriteByte(line[i])
		case (c == ' ' || c == '\t') && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
