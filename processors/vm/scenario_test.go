package vm

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/scenario"
	"github.com/vmplane/vmplane/schemas"
)

// TestScenarios plays testdata/*.txt (see internal/scenario for the
// syntax). The directives:
//
//	config job_timeout=60s ...   settings (first case only)
//	step <at> <Type> k=v ...      Step one input record; key vm_id or vm1
//	tick <at>                     run every timer due up to <at>, as the runtime would
//	state                         print the VM state
//	wake                          print when the VM next needs a Tick
//	set <name> <value>            SettingChanged at the global scope
//
// <at> is a duration from the Unix epoch, so times in outputs (Unix ms)
// read as offsets. Records print as Type[key] with their non-zero fields.
// After every step the runner checks that the input state was not
// modified, that every output encodes and goes to a topic that carries it,
// and continues with the state as restored from its Avro encoding.
//
// go test ./processors/vm -run TestScenarios -update rewrites the expected
// outputs; review the diff before keeping it.
func TestScenarios(t *testing.T) {
	scenario.Run(t, "testdata/*.txt", func(t *testing.T) scenario.Step {
		r := &runner{t: t, m: New(DefaultConfig())}
		return r.run
	})
	// rare(s) hands every record without rare fields the same zero
	// value: a write through it would reach every such VM.
	if !reflect.DeepEqual(noRare, schemas.VmRare{}) {
		t.Fatalf("noRare was written: %+v", noRare)
	}
}

const defaultKey = "vm1"

type runner struct {
	t *testing.T
	m *Machine
	s *schemas.VmRecord
}

func (r *runner) run(c scenario.Case) []string {
	t := r.t
	switch c.Cmd {
	case "config":
		cfg := DefaultConfig()
		for _, kv := range c.Args {
			k, v, _ := strings.Cut(kv, "=")
			d, err := time.ParseDuration(v)
			n, nerr := strconv.Atoi(v)
			switch {
			case k == "job_timeout" && err == nil:
				cfg.JobTimeout = d
			case k == "wakeup_interval" && err == nil:
				cfg.WakeupInterval = d
			case k == "stall_threshold" && err == nil:
				cfg.StallThreshold = d
			case k == "expunge_delay" && err == nil:
				cfg.ExpungeDelay = d
			case k == "resend_after" && err == nil:
				cfg.ResendAfter = d
			case k == "ha_max_retries" && nerr == nil:
				cfg.HAMaxRetries = int32(n)
			case k == "power_state_update_limit" && nerr == nil:
				cfg.PowerStateUpdateLimit = int32(n)
			default:
				t.Fatalf("bad config %q", kv)
			}
		}
		r.m = New(cfg)
		return nil
	case "set":
		if len(c.Args) != 2 {
			t.Fatalf("%s: want set <name> <value>", c.Pos)
		}
		if err := r.m.Configure(&schemas.SettingChanged{Name: c.Args[0], Scope: "global", Value: c.Args[1]}); err != nil {
			return []string{"refused: " + err.Error()}
		}
		return nil
	case "step":
		now := at(t, c.Args[0])
		in := parseRecord(t, c.Args[1], c.Args[2:])
		return r.apply(func(s *schemas.VmRecord) (*schemas.VmRecord, []schemas.Record) { return r.m.Step(s, in, now) })
	case "tick":
		until := at(t, c.Args[0])
		var out []string
		for range 100000 {
			w := r.m.Wake(r.s)
			if w.IsZero() || w.After(until) {
				return out
			}
			out = append(out, r.apply(func(s *schemas.VmRecord) (*schemas.VmRecord, []schemas.Record) { return r.m.Tick(s, defaultKey, w) })...)
		}
		t.Fatalf("%s: the timers never settle", c.Pos)
	case "state":
		if r.s == nil {
			return []string{"<nil>"}
		}
		return []string{render(reflect.ValueOf(r.s).Elem(), "")}
	case "wake":
		w := r.m.Wake(r.s)
		if w.IsZero() {
			return []string{"never"}
		}
		return []string{time.Duration(w.UnixMilli() * int64(time.Millisecond)).String()}
	}
	t.Fatalf("%s: unknown directive %q", c.Pos, c.Directive)
	return nil
}

// apply runs one Step or Tick with the checks every step must pass, and
// keeps the state as restored from its encoding.
func (r *runner) apply(f func(*schemas.VmRecord) (*schemas.VmRecord, []schemas.Record)) []string {
	t := r.t
	t.Helper()
	before := clone(r.s)
	s, outs := f(r.s)
	if !reflect.DeepEqual(before, r.s) {
		t.Fatalf("the input state was modified in place")
	}
	var lines []string
	for _, o := range outs {
		checkOutput(t, o)
		lines = append(lines, renderRecord(o))
	}
	r.s = restore(t, s)
	checkInvariants(t, r.s)
	return lines
}

func encodeState(t *testing.T, s *schemas.VmRecord) []byte {
	if s == nil {
		return nil
	}
	b, err := schemas.Marshal(s)
	if err != nil {
		t.Fatalf("encode state: %v", err)
	}
	return b
}

// restore round-trips the state through its Avro encoding, as a restart
// restoring from vm.state.v1 would.
func restore(t *testing.T, s *schemas.VmRecord) *schemas.VmRecord {
	if s == nil {
		return nil
	}
	b := encodeState(t, s)
	v, err := schemas.Unmarshal(b)
	if err != nil {
		t.Fatalf("decode state: %v", err)
	}
	back := v.(*schemas.VmRecord)
	// Avro writes map entries in Go's map order, so compare decoded values.
	if render(reflect.ValueOf(s).Elem(), "") != render(reflect.ValueOf(back).Elem(), "") {
		t.Fatalf("state does not survive a round trip")
	}
	// The machine keeps the out-of-line parts exactly as decoding does:
	// nil when zero.
	if (s.Job == nil) != (back.Job == nil) || (s.Rare == nil) != (back.Rare == nil) || (rare(s).OldOffering == nil) != (rare(back).OldOffering == nil) {
		t.Fatalf("job %v, rare %v: nil when set or set when zero", s.Job, s.Rare)
	}
	return back
}

func checkOutput(t *testing.T, o schemas.Record) {
	t.Helper()
	name := schemas.TypeName(o.Value)
	spec, ok := schemas.TopicByName(o.Topic)
	if !ok || !spec.Carries(name) {
		t.Fatalf("%s produced to %s, which does not carry it", name, o.Topic)
	}
	if o.Key == "" || o.Headers != nil {
		t.Fatalf("%s: key %q headers %v", name, o.Key, o.Headers)
	}
	if _, err := schemas.Marshal(o.Value); err != nil {
		t.Fatalf("encode output: %v", err)
	}
	checkReason(t, o.Value)
}

// checkReason holds the reason of every failure and rejection a scenario
// emits to the closed set of error codes (schemas/job_codes.go).
func checkReason(t *testing.T, v any) {
	t.Helper()
	var reason string
	switch e := v.(type) {
	case *schemas.JobFailed:
		reason = e.Reason
	case *schemas.JobRejected:
		reason = e.Reason
	default:
		return
	}
	if !schemas.IsErrorCode(reason) || reason == schemas.CodeUnknown {
		t.Fatalf("%s with reason %q, which is not an error code of schemas.ErrorCodes", schemas.TypeName(v), reason)
	}
}

func checkInvariants(t *testing.T, s *schemas.VmRecord) {
	t.Helper()
	if s == nil {
		return
	}
	job := jobID(s)
	if (job == "") != (rare(s).TaskState == "") {
		t.Fatalf("job %q with task_state %q", job, rare(s).TaskState)
	}
	seen := map[string]bool{job: job != ""}
	for _, q := range rare(s).Queue {
		if seen[q.CommandID] {
			t.Fatalf("command %s twice among the running and queued jobs", q.CommandID)
		}
		seen[q.CommandID] = true
	}
	if job == "" && len(rare(s).Queue) > 0 {
		t.Fatalf("queued commands with no job running")
	}
	// A Tick sends the command again while the answer is due, so the
	// job's row must know the command of the phase it waits in.
	if job != "" && s.Job.Wait.Kind == waitAnswer {
		if a, ok := actionByName[s.Job.JobType]; !ok || a.sends[s.Job.Phase] == nil {
			t.Fatalf("job %s (%s) waits for an answer in phase %q, which sends no agent command", job, s.Job.JobType, s.Job.Phase)
		}
	}
}

func at(t *testing.T, s string) time.Time {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("bad time %q: %v", s, err)
	}
	return time.UnixMilli(d.Milliseconds()).UTC()
}

// parseRecord builds an input record: Type k=v ... with avro field names
// (offering.cpu for nested ones).
func parseRecord(t *testing.T, typ string, kvs []string) schemas.Record {
	v, ok := schemas.New(typ)
	if !ok {
		t.Fatalf("unknown record type %q", typ)
	}
	rv := reflect.ValueOf(v).Elem()
	for _, kv := range kvs {
		k, val, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(val, `"`) {
			u, err := strconv.Unquote(val)
			if err != nil {
				t.Fatalf("bad quoted value %q", val)
			}
			val = u
		}
		f, ok := fieldByPath(rv, k)
		if !ok {
			t.Fatalf("%s has no field %q", typ, k)
		}
		setValue(t, f, val)
	}
	key := defaultKey
	if f, ok := fieldByPath(rv, "vm_id"); ok {
		if f.String() == "" {
			f.SetString(defaultKey)
		}
		key = f.String()
	}
	var topic string
	for _, tp := range []string{schemas.TopicVmCommands, schemas.TopicVmPower, schemas.TopicVmAnswers, schemas.TopicVmSignals} {
		if spec, _ := schemas.TopicByName(tp); spec.Carries(typ) {
			topic = tp
		}
	}
	if topic == "" {
		t.Fatalf("%s is not an input of the VM processor", typ)
	}
	return schemas.Record{Topic: topic, Key: key, Value: v}
}

func fieldByPath(v reflect.Value, path string) (reflect.Value, bool) {
	head, rest, nested := strings.Cut(path, ".")
	for _, f := range schemas.Fields(v.Type()) {
		if f.Name != head {
			continue
		}
		fv := v.FieldByIndex(f.Index)
		if nested && fv.Kind() == reflect.Slice {
			return elemByPath(fv, rest)
		}
		if nested {
			return fieldByPath(fv, rest)
		}
		return fv, true
	}
	return reflect.Value{}, false
}

// elemByPath follows "<index>.<field>" into a slice of structs, growing
// it to hold the index (volumes.0.pool_id=p1).
func elemByPath(s reflect.Value, path string) (reflect.Value, bool) {
	head, rest, nested := strings.Cut(path, ".")
	i, err := strconv.Atoi(head)
	if err != nil || i < 0 || !nested || s.Type().Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	for s.Len() <= i {
		s.Set(reflect.Append(s, reflect.Zero(s.Type().Elem())))
	}
	return fieldByPath(s.Index(i), rest)
}

func setValue(t *testing.T, f reflect.Value, s string) {
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			t.Fatalf("bad bool %q", s)
		}
		f.SetBool(b)
	case reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("bad int %q", s)
		}
		f.SetInt(n)
	case reflect.Slice:
		if f.Type().Elem().Kind() != reflect.String {
			t.Fatalf("cannot set %s", f.Type())
		}
		f.Set(reflect.ValueOf(strings.Split(strings.Trim(s, "[]"), ",")))
	default:
		t.Fatalf("cannot set %s", f.Type())
	}
}

// renderRecord prints an output as Type[key] k=v ...; vm_id is left out of
// vm.events.v1 records, where it is the key.
func renderRecord(o schemas.Record) string {
	rv := reflect.ValueOf(o.Value).Elem()
	line := fmt.Sprintf("%s[%s]", schemas.TypeName(o.Value), o.Key)
	fields := render(rv, "")
	if o.Topic == schemas.TopicVmEvents {
		fields = strings.TrimSpace(strings.Replace(" "+fields+" ", " vm_id="+o.Key+" ", " ", 1))
	}
	if fields != "" {
		line += " " + fields
	}
	return line
}

// render prints a struct's non-zero fields as k=v, nested structs (also
// behind pointers) with a dotted prefix.
func render(v reflect.Value, prefix string) string {
	var parts []string
	for _, f := range schemas.Fields(v.Type()) {
		fv, err := v.FieldByIndexErr(f.Index)
		if err != nil || fv.IsZero() { // zero, or in a nil inline part
			continue
		}
		if fv.Kind() == reflect.Pointer {
			fv = fv.Elem()
		}
		name := prefix + f.Name
		switch fv.Kind() {
		case reflect.Struct:
			if s := render(fv, name+"."); s != "" {
				parts = append(parts, s)
			}
			continue
		case reflect.Slice:
			if fv.Len() == 0 {
				continue
			}
		case reflect.Map:
			if fv.Len() == 0 {
				continue
			}
		}
		parts = append(parts, name+"="+renderValue(fv))
	}
	return strings.Join(parts, " ")
}

func renderValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if s == "" || strings.ContainsAny(s, " \"=[]{}") {
			return strconv.Quote(s)
		}
		return s
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return fmt.Sprintf("<%d bytes>", v.Len())
		}
		var items []string
		for i := 0; i < v.Len(); i++ {
			items = append(items, renderValue(v.Index(i)))
		}
		return "[" + strings.Join(items, ",") + "]"
	case reflect.Struct:
		return "{" + render(v, "") + "}"
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		var items []string
		for _, k := range keys {
			items = append(items, k.String()+":"+renderValue(v.MapIndex(k)))
		}
		return "{" + strings.Join(items, ",") + "}"
	}
	return fmt.Sprint(v.Interface())
}
