package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vmplane/vmplane/api"
)

// emit prints an answer. raw is the API's JSON: an object, or an array
// for a list (an empty list is [], never null); table draws it for people.
// -o json prints raw as it is, -o yaml the same as YAML, -o value the bare
// values (a list: a line per row, its values separated by spaces; an
// object: a line per field); -c keeps the fields named, in that order, and
// makes -o table a plain table of them.
func (a *cli) emit(raw json.RawMessage, table func(w io.Writer) error) error {
	if a.plain() && table != nil {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		if err := table(tw); err != nil {
			return err
		}
		return tw.Flush()
	}
	v, err := parseAnswer(raw)
	if err != nil {
		return fmt.Errorf("format answer: %w", err)
	}
	cols := a.columns
	if len(cols) > 0 {
		if err := v.check(cols, fieldsOf(a.shows)); err != nil {
			return err
		}
		v = v.project(cols)
		raw = v.json()
	}
	switch a.output {
	case "json":
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return fmt.Errorf("format answer: %w", err)
		}
		buf.WriteByte('\n')
		_, err := a.stdout.Write(buf.Bytes())
		return err
	case "yaml":
		y, err := toYAML(raw)
		if err != nil {
			return fmt.Errorf("format answer: %w", err)
		}
		_, err = a.stdout.Write(y)
		return err
	case "value":
		return v.values(a.stdout)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	v.table(tw)
	return tw.Flush()
}

// plain says whether answers print as vmctl's own tables and lines (-o
// table without -c) rather than as data.
func (a *cli) plain() bool { return a.output == "table" && len(a.columns) == 0 }

func decodeRaw[T any](raw json.RawMessage) (T, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("decode answer: %w", err)
	}
	return v, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ago(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return time.Since(*t).Round(time.Second).String() + " ago"
}

func printVM(w io.Writer, v api.VM) {
	fmt.Fprintf(w, "id:\t%s\n", v.ID)
	fmt.Fprintf(w, "name:\t%s\n", v.Name)
	fmt.Fprintf(w, "account:\t%s\n", v.Account)
	fmt.Fprintf(w, "state:\t%s\n", stateOf(v))
	fmt.Fprintf(w, "power:\t%s\n", powerOf(v))
	fmt.Fprintf(w, "host:\t%s\n", hostOf(v))
	fmt.Fprintf(w, "offering:\t%s (%d vCPU, %d MiB)\n", v.Offering, v.CPU, v.MemoryMB)
	fmt.Fprintf(w, "zone:\t%s\n", orDash(v.ZoneID))
	fmt.Fprintf(w, "ha:\t%v\n", v.HA)
	fmt.Fprintf(w, "allowed actions:\t%s\n", orDash(strings.Join(v.AllowedActions, ", ")))
	fmt.Fprintf(w, "created:\t%s\n", v.CreatedAt.Format(time.RFC3339))
	fmt.Fprintf(w, "updated:\t%s\n", v.UpdatedAt.Format(time.RFC3339))
	if len(v.Volumes) > 0 {
		fmt.Fprintln(w)
		printVolumes(w, v.Volumes, false)
	}
	if len(v.Nics) > 0 {
		fmt.Fprintln(w)
		printNics(w, v.Nics)
	}
}

// powerOf is a VM's power state, and while its host is not Up what was
// last seen, and how long ago.
func powerOf(v api.VM) string {
	if v.LastPowerState == "" {
		return orDash(v.PowerState)
	}
	return fmt.Sprintf("%s (last seen %s, %s)", v.PowerState, v.LastPowerState, ago(v.PowerStateAt))
}

// hostOf is a VM's host, with its status when that is not Up.
func hostOf(v api.VM) string {
	if v.HostID == "" || v.HostStatus == "" || v.HostStatus == "Up" {
		return orDash(v.HostID)
	}
	return v.HostID + " (" + v.HostStatus + ")"
}

func stateOf(v api.VM) string {
	if v.TaskState == "" {
		return orDash(v.VmState)
	}
	return v.VmState + " (" + v.TaskState + ")"
}

func printJob(w io.Writer, j api.Job) {
	fmt.Fprintf(w, "id:\t%s\n", j.ID)
	fmt.Fprintf(w, "vm:\t%s\n", orDash(j.VmID))
	fmt.Fprintf(w, "type:\t%s\n", j.Type)
	fmt.Fprintf(w, "state:\t%s\n", j.State)
	if p := j.Progress; p != nil {
		fmt.Fprintf(w, "progress:\t%d of %d (%d%%)\n", p.Done, p.Total, p.Percent)
	}
	if j.TaskState != "" {
		fmt.Fprintf(w, "task state:\t%s\n", j.TaskState)
	}
	if j.Reason != "" {
		reason := j.Reason
		if j.Detail != "" {
			reason += " (" + j.Detail + ")" // as --wait prints it
		}
		fmt.Fprintf(w, "reason:\t%s\n", reason)
	}
	if j.ErrorCode != "" {
		fmt.Fprintf(w, "error code:\t%s\n", j.ErrorCode)
	}
	if c := j.Caller; c != nil {
		fmt.Fprintf(w, "asked by:\t%s\n", callerLine(*c))
	}
	fmt.Fprintf(w, "created:\t%s\n", j.CreatedAt.Format(time.RFC3339))
	if j.FinishedAt != nil {
		fmt.Fprintf(w, "finished:\t%s (%s)\n", j.FinishedAt.Format(time.RFC3339), j.FinishedAt.Sub(j.CreatedAt).Round(time.Millisecond))
	}
	for _, c := range j.Children {
		fmt.Fprintf(w, "  child %s: %s of %s, %s\n", c.ID, orDash(c.Type), orDash(c.VmID), c.State)
	}
	for _, s := range j.Steps {
		fmt.Fprintln(w, stepLine(s))
	}
}

// callerLine is who asked for a job, as vmctl shows it:
// "account acme, key 3f9a1c20b7d4, request 5d0c…" ("account system" alone).
func callerLine(c api.JobCaller) string {
	s := "account " + c.Account
	if c.KeyID != "" {
		s += ", key " + c.KeyID
	}
	if c.RequestID != "" {
		s += ", request " + c.RequestID
	}
	return s
}

// stepLine is how a job step reads in vmctl: "  [3] Spawning: StartVm sent to host-2".
func stepLine(s api.JobStep) string {
	text := s.Text
	if text == "" {
		text = s.Step
	}
	return fmt.Sprintf("  [%d] %s: %s", s.Seq, orDash(s.TaskState), text)
}
