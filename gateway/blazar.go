package gateway

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/schemas"
)

// A lease reservation also takes OpenStack Blazar's names of a
// physical:host reservation, so that a Blazar user's request works as
// written (docs/design.md §10 has the table): min and max are min_hosts and
// max_hosts, and the JSON filters hypervisor_properties and
// resource_properties become host_properties, vmplane's exact matches on
// the properties a host's agent reports. A filter maps when it is an
// equality, ["=", "$name", "value"], or an "and" of equalities; anything
// else (<, >=, in, or, not) is refused with a 400 that says so, since
// vmplane's lease calendar matches properties by equality only. A field
// given under both names must agree, else a 400 names both.

// blazarResourceType is the only Blazar reservation type vmplane serves.
const blazarResourceType = "physical:host"

// filterExample is what a refusal shows of a filter vmplane maps.
const filterExample = `["and", ["=", "$gpu", "yes"], ["=", "$rack", "r1"]]`

// badRequest is a 400 naming the fields of the request it is about.
func badRequest(fields []string, format string, args ...any) *apiError {
	e := errorf(http.StatusBadRequest, codeInvalidRequest, format, args...)
	e.Details = map[string]any{"field": fields[0]}
	if len(fields) > 1 {
		e.Details["fields"] = fields
	}
	return e
}

// hostCount is one host count of a reservation under vmplane's name or
// Blazar's: the one given, and the name it was given under (vmplane's when
// neither was). Both given and different is a 400 naming both.
func hostCount(at, name string, v api.HostCount, blazar string, bv api.HostCount) (api.HostCount, string, error) {
	switch {
	case bv == 0:
		return v, name, nil
	case v == 0:
		return bv, blazar, nil
	case v != bv:
		return 0, "", badRequest([]string{at + name, at + blazar}, "%s%s (%d) and %s%s (%d) are one field under vmplane's and Blazar's names; give one, or the same value",
			at, name, v, at, blazar, bv)
	}
	return v, name, nil
}

// reservationProperties joins host_properties and the properties Blazar's
// filters ask for; a property asked with two values under two names is a
// 400 naming both, since no host could match.
func reservationProperties(at string, r api.ReservationRequest) (map[string]string, error) {
	if r.ResourceType != "" && r.ResourceType != blazarResourceType {
		return nil, badRequest([]string{at + "resource_type"}, "%sresource_type %q: vmplane leases reserve hosts, Blazar's %s, only",
			at, r.ResourceType, blazarResourceType)
	}
	props := maps.Clone(r.HostProperties)
	from := map[string]string{}
	for k := range props {
		from[k] = at + "host_properties"
	}
	for _, f := range []struct{ name, text string }{
		{"hypervisor_properties", r.HypervisorProperties},
		{"resource_properties", r.ResourceProperties},
	} {
		field := at + f.name
		got, err := blazarFilter(field, f.text)
		if err != nil {
			return nil, err
		}
		for _, k := range slices.Sorted(maps.Keys(got)) {
			if was, ok := props[k]; ok && was != got[k] {
				return nil, badRequest([]string{from[k], field}, "%s asks for %s %q and %s for %q: no host has both",
					from[k], k, was, field, got[k])
			}
			if props == nil {
				props = map[string]string{}
			}
			props[k], from[k] = got[k], field
		}
	}
	return props, nil
}

// blazarFilter reads a Blazar JSON filter, given as a string as Blazar
// takes it: "" and "[]" ask for nothing.
func blazarFilter(field, text string) (map[string]string, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, badRequest([]string{field}, "%s is not a Blazar JSON filter such as %s", field, filterExample)
	}
	if a, ok := v.([]any); ok && len(a) == 0 {
		return nil, nil
	}
	props := map[string]string{}
	if err := equalities(field, v, props); err != nil {
		return nil, err
	}
	return props, nil
}

// equalities adds to props what the filter v asks: an equality, or an
// "and" of filters that are.
func equalities(field string, v any, props map[string]string) error {
	a, ok := v.([]any)
	op, _ := first(a)
	switch {
	case !ok || op == "":
		return badRequest([]string{field}, "%s: %s is no Blazar filter: want [operator, ...] such as %s", field, compact(v), filterExample)
	case op == "and":
		for _, sub := range a[1:] {
			if err := equalities(field, sub, props); err != nil {
				return err
			}
		}
		return nil
	case op != "=" && op != "==":
		return badRequest([]string{field}, "%s: operator %q cannot be mapped: vmplane matches host properties by equality only, "+
			"\"=\" or an \"and\" of them, such as %s", field, op, filterExample)
	case len(a) != 3:
		return badRequest([]string{field}, "%s: %s: an equality is [\"=\", \"$name\", value]", field, compact(v))
	}
	name, _ := a[1].(string)
	if !strings.HasPrefix(name, "$") || len(name) == 1 {
		return badRequest([]string{field}, "%s: %s: the second element names a property, \"$name\"", field, compact(v))
	}
	var value string
	switch x := a[2].(type) {
	case string:
		value = x
	case json.Number:
		value = x.String()
	default:
		return badRequest([]string{field}, "%s: %s: the value is a string or a number", field, compact(v))
	}
	name = name[1:]
	// The filter is text as a whole, but its escapes may hide what a record
	// may not carry (a NUL, say): the property must be text itself.
	for _, x := range []string{name, value} {
		if err := schemas.CheckText(x); err != nil {
			return badRequest([]string{field}, "%s: %q is not text: %v", field, x, err)
		}
	}
	if was, ok := props[name]; ok && was != value {
		return badRequest([]string{field}, "%s asks for %s both %q and %q: no host has both", field, name, was, value)
	}
	props[name] = value
	return nil
}

// first is the operator of a filter: its first element, a string.
func first(a []any) (string, bool) {
	if len(a) == 0 {
		return "", false
	}
	op, ok := a[0].(string)
	return op, ok
}

// compact is v as JSON, cut for an error message.
func compact(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a decoded JSON value encodes
	s := []rune(strings.TrimSpace(b.String()))
	if len(s) > 80 {
		return string(s[:77]) + "..."
	}
	return string(s)
}
