package actions

import (
	"regexp"
	"slices"
	"testing"
)

// The catalog is well formed: one row per name and command, lower snake
// case names, a doc everywhere, each parameter a known kind with a flag
// of its own. Whether the commands and parameters exist is held by
// schemas' test, which knows the records.
func TestCatalogIsWellFormed(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	names, commands := map[string]bool{}, map[string]bool{}
	for _, a := range Catalog {
		if names[a.Name] || commands[a.Command] {
			t.Errorf("action %s (%s) is in the catalog twice", a.Name, a.Command)
		}
		names[a.Name], commands[a.Command] = true, true
		if !snake.MatchString(a.Name) || a.Command == "" || a.Doc == "" {
			t.Errorf("action %+v needs a lower snake case name, a command and a doc", a)
		}
		flags := map[string]bool{}
		for _, p := range a.Params {
			if !slices.Contains([]string{KindBool, KindString, KindOffering, KindInt}, p.Kind) {
				t.Errorf("action %s: parameter %s has kind %q", a.Name, p.Name, p.Kind)
			}
			if p.Flag == "" || flags[p.Flag] || p.Doc == "" {
				t.Errorf("action %s: parameter %s needs a flag of its own and a doc", a.Name, p.Name)
			}
			flags[p.Flag] = true
			if got, ok := a.Param(p.Name); !ok || got != p {
				t.Errorf("action %s: Param(%s) = %+v, %v", a.Name, p.Name, got, ok)
			}
		}
		if got, ok := ByName(a.Name); !ok || got.Command != a.Command {
			t.Errorf("ByName(%s) = %+v, %v", a.Name, got, ok)
		}
	}
	if _, ok := ByName("deploy"); ok {
		t.Errorf("deploy is an action")
	}
	if _, ok := Catalog[0].Param("no_such"); ok {
		t.Errorf("%s has a parameter no_such", Catalog[0].Name)
	}
	if got := Names(); len(got) != len(Catalog) || !slices.IsSorted(got) {
		t.Errorf("Names() = %v", got)
	}
}
