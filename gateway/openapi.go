package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vmplane/vmplane/api"
)

// The OpenAPI 3.1 document of the API, served at /v1/openapi.json. It is
// generated from the table below and the types of package api that the
// routes decode and answer, by their json tags; TestOpenAPIMatchesRoutes
// walks the router and fails when a route is missing from the table or the
// table names a route that does not exist, TestOpenAPISchemasAreTheWire
// holds each schema to what encoding/json writes of its type, and
// TestOpenAPIDescribesEveryAnswer holds each route's documented schemas to
// what the route takes and answers. A new route adds its line here.

// apiOp documents one route.
type apiOp struct {
	method, path string
	summary      string
	admin        bool     // admin role required
	query        []string // query parameters
	body         any      // request body type (a zero value), nil for none
	status       int      // success status
	resp         any      // success response type, nil for none
	alt          any      // the success response's other type, when the route has two (anyOf)
	stream       bool     // text/event-stream
}

var apiOps = []apiOp{
	{method: "POST", path: "/vms", summary: "Deploy a VM; its id (vm_id) may be used at once, on any gateway", body: api.DeployRequest{}, status: 202, resp: api.Job{}},
	{method: "GET", path: "/vms", summary: "List VMs", query: []string{"limit", "cursor", "state", "host"}, status: 200, resp: api.List[api.VM]{}},
	{method: "GET", path: "/vms/{id}", summary: "Get a VM (ETag, If-None-Match); one just deployed is Building, with the deploy's fields and no allowed actions, until the processor's first state", status: 200, resp: api.VM{}},
	{method: "DELETE", path: "/vms/{id}", summary: "Terminate a VM", status: 202, resp: api.Job{}},
	{method: "POST", path: "/vms/{id}/actions", summary: "Act on a VM (start, stop, ...)", body: api.ActionRequest{}, status: 202, resp: api.Job{}},
	{method: "GET", path: "/vms/{id}/snapshots", summary: "List a VM's snapshots, oldest first", status: 200, resp: api.List[api.Snapshot]{}},
	{method: "GET", path: "/vms/{id}/history", summary: "A VM's event history; with at, the VM as it was then", query: []string{"limit", "cursor", "at"}, status: 200,
		resp: api.List[api.VmHistoryEvent]{}, alt: api.VmAsOf{}},
	{method: "GET", path: "/jobs", summary: "List jobs", query: []string{"limit", "cursor", "vm", "state", "key"}, status: 200, resp: api.List[api.Job]{}},
	{method: "GET", path: "/jobs/{id}", summary: "Get a job; wait long-polls; one just accepted is pending, as its 202 answered", query: []string{"wait", "steps", "after_step"}, status: 200, resp: api.Job{}},
	{method: "GET", path: "/jobs/{id}/journal", summary: "A job's journal: its steps while the read model has the job, the journal's lines after", status: 200,
		resp: api.List[api.JobStep]{}, alt: api.List[api.JournalLine]{}},
	{method: "POST", path: "/jobs/{id}/cancel", summary: "Cancel a job: a queued one leaves the queue, a running one stops at its next safe point (a job whose agent command is out waits for its answer); 409 for a job that has ended or a terminate",
		body: api.CancelRequest{}, status: 202, resp: api.Job{}},
	{method: "GET", path: "/jobs/{id}/events", summary: "A job's events as Server-Sent Events (Last-Event-ID resumes)", status: 200, stream: true},
	{method: "GET", path: "/events", summary: "VM and job events as Server-Sent Events (Last-Event-ID resumes)", query: []string{"vm"}, status: 200, stream: true},
	{method: "POST", path: "/journal/query", summary: "Query the journal (analysts)", admin: true, body: api.QueryRequest{}, status: 200, resp: api.QueryResult{}},
	{method: "GET", path: "/alerts", summary: "List alerts (a host's only for admins)", query: []string{"limit", "cursor", "vm", "host", "zone", "kind", "acked"}, status: 200, resp: api.List[api.Alert]{}},
	{method: "GET", path: "/alerts/{id}", summary: "Get an alert", status: 200, resp: api.Alert{}},
	{method: "POST", path: "/alerts/{id}/ack", summary: "Acknowledge an alert (202; 200 when acknowledged already)", status: 202, resp: api.Alert{}},
	{method: "GET", path: "/hosts", summary: "List hosts", admin: true, query: []string{"limit", "cursor"}, status: 200, resp: api.List[api.Host]{}},
	{method: "GET", path: "/hosts/{id}", summary: "Get a host, its reservation and allocations", admin: true, status: 200, resp: api.HostDetail{}},
	{method: "POST", path: "/hosts/{id}/actions", summary: "Act on a host (enable, disable, maintenance, unmanage, manage, ...)", admin: true, body: api.HostActionRequest{}, status: 202, resp: api.HostCommandAccepted{}},
	{method: "POST", path: "/hosts", summary: "Add a host before its agent connects (or a removed one again)", admin: true, body: api.HostAddRequest{}, status: 202, resp: api.HostCommandAccepted{}},
	{method: "GET", path: "/offerings", summary: "List offerings", status: 200, resp: api.List[api.Offering]{}},
	{method: "GET", path: "/offerings/{id}", summary: "Get an offering (by id or name)", status: 200, resp: api.Offering{}},
	{method: "POST", path: "/offerings", summary: "Create an offering (its id is off-<name>)", admin: true, body: api.OfferingRequest{}, status: 201, resp: api.Offering{}},
	{method: "PATCH", path: "/offerings/{id}", summary: "Update an offering's name, planner, HA or host tags (a change of cpu or memory_mb is refused: create a new offering)", admin: true, body: api.OfferingUpdate{}, status: 200, resp: api.Offering{}},
	{method: "DELETE", path: "/offerings/{id}", summary: "Delete an offering; refused (409) while VMs that are not expunged use it", admin: true, status: 200, resp: api.Offering{}},
	{method: "GET", path: "/planners", summary: "List deployment planners", status: 200, resp: api.List[api.Planner]{}},
	{method: "GET", path: "/templates", summary: "List templates (not deleted)", status: 200, resp: api.List[api.Template]{}},
	{method: "GET", path: "/templates/{id}", summary: "Get a template (by id or name)", status: 200, resp: api.Template{}},
	{method: "POST", path: "/templates", summary: "Add a template to the catalog (its id, left out, is its name)", admin: true, body: api.TemplateRequest{}, status: 201, resp: api.Template{}},
	{method: "DELETE", path: "/templates/{id}", summary: "Mark a template deleted: VMs made of it keep their volumes, no deploy may name it", admin: true, status: 200, resp: api.Template{}},
	{method: "GET", path: "/pools", summary: "List primary storage pools", admin: true, query: []string{"zone"}, status: 200, resp: api.List[api.Pool]{}},
	{method: "POST", path: "/pools", summary: "Create a primary storage pool; placement applies or refuses it (the pool's last_error)", admin: true, body: api.PoolRequest{}, status: 202, resp: api.PoolAccepted{}},
	{method: "GET", path: "/pools/{id}", summary: "Get a storage pool (a refused creation: state Refused, last_error)", admin: true, status: 200, resp: api.Pool{}},
	{method: "PATCH", path: "/pools/{id}", summary: "Change a pool's capacity, tags or state (Up, Maintenance, Failed, Disabled)", admin: true, body: api.PoolUpdate{}, status: 202, resp: api.PoolAccepted{}},
	{method: "DELETE", path: "/pools/{id}", summary: "Delete a storage pool; refused (409) while volumes are on it", admin: true, status: 202, resp: api.PoolAccepted{}},
	{method: "GET", path: "/networks", summary: "List guest networks", query: []string{"zone"}, status: 200, resp: api.List[api.Network]{}},
	{method: "GET", path: "/networks/{id}", summary: "Get a guest network (by id, or name in the gateway's zone)", status: 200, resp: api.Network{}},
	{method: "POST", path: "/networks", summary: "Create a guest network; placement applies or refuses it (the network's last_error)", admin: true, body: api.NetworkRequest{}, status: 202, resp: api.NetworkAccepted{}},
	{method: "DELETE", path: "/networks/{id}", summary: "Delete a guest network; refused (409) while NICs hold its addresses", admin: true, status: 202, resp: api.NetworkAccepted{}},
	{method: "GET", path: "/volumes", summary: "List volumes (a user: its own)", query: []string{"limit", "cursor", "vm", "deleted"}, status: 200, resp: api.List[api.Volume]{}},
	{method: "GET", path: "/volumes/{id}", summary: "Get a volume with its snapshots", status: 200, resp: api.Volume{}},
	{method: "POST", path: "/volumes/{id}/actions", summary: "A volume action of its VM (attach_volume, detach_volume, resize_volume, snapshot_volume, delete_volume)",
		body: api.VolumeActionRequest{}, status: 202, resp: api.Job{}},
	{method: "GET", path: "/settings", summary: "List operator settings, with the values in effect for a zone and cluster", admin: true,
		query: []string{"zone", "cluster"}, status: 200, resp: api.List[api.Setting]{}},
	{method: "GET", path: "/settings/{name}", summary: "Get an operator setting", admin: true, query: []string{"zone", "cluster"}, status: 200, resp: api.Setting{}},
	{method: "PUT", path: "/settings/{name}", summary: "Set an operator setting, globally or for a zone or cluster; a value out of range is a 422 naming it",
		admin: true, body: api.SettingRequest{}, status: 202, resp: api.Setting{}},
	{method: "DELETE", path: "/settings/{name}", summary: "Set an operator setting back to the next wider scope's value or its default", admin: true,
		query: []string{"zone", "cluster"}, status: 202, resp: api.Setting{}},
	{method: "GET", path: "/zones/{id}/capacity", summary: "A zone's capacity", admin: true, status: 200, resp: api.ZoneCapacity{}},
	{method: "POST", path: "/accounts", summary: "Create an account", admin: true, body: api.AccountRequest{}, status: 201, resp: api.Account{}},
	{method: "GET", path: "/accounts", summary: "List accounts", admin: true, query: []string{"limit", "cursor"}, status: 200, resp: api.List[api.Account]{}},
	{method: "GET", path: "/accounts/{id}", summary: "Get an account (a user: its own)", status: 200, resp: api.Account{}},
	{method: "POST", path: "/accounts/{id}/keys", summary: "Issue an API key; the key is shown once: a retry with the same Idempotency-Key answers the key's id and a note, never the key", admin: true, body: api.KeyRequest{}, status: 201, resp: api.APIKey{}},
	{method: "GET", path: "/accounts/{id}/keys", summary: "List an account's API keys (never the keys)", query: []string{"limit", "cursor"}, status: 200, resp: api.List[api.APIKey]{}},
	{method: "GET", path: "/accounts/{id}/keys/{key}", summary: "Get an API key (never the key)", status: 200, resp: api.APIKey{}},
	{method: "DELETE", path: "/accounts/{id}/keys/{key}", summary: "Revoke an API key", admin: true, status: 204},
	{method: "POST", path: "/leases", summary: "Create a lease; its id may be used at once, on any gateway", body: api.LeaseRequest{}, status: 202, resp: api.Lease{}},
	{method: "GET", path: "/leases", summary: "List leases", query: []string{"limit", "cursor"}, status: 200, resp: api.List[api.Lease]{}},
	{method: "GET", path: "/leases/{id}", summary: "Get a lease", status: 200, resp: api.Lease{}},
	{method: "PUT", path: "/leases/{id}", summary: "Update a lease", body: api.LeaseUpdate{}, status: 202, resp: api.Lease{}},
	{method: "DELETE", path: "/leases/{id}", summary: "Delete a lease", status: 202, resp: api.Lease{}},
	{method: "GET", path: "/leases/{id}/events", summary: "A lease's events", status: 200, resp: api.List[api.LeaseEvent]{}},
}

// idempotencyDoc describes the Idempotency-Key header.
const idempotencyDoc = "Up to 255 printable ASCII characters. The first request with a key is served and its success " +
	"kept for 24 h for the API key that sent it (no other key, not even of the same account, sees it); a retry " +
	"with the same key, method, path and body gets the kept answer (header Idempotent-Replayed: true); the same " +
	"key with another request is a 422. A failed request keeps nothing. The answer kept of an API key's " +
	"creation holds no key: a retry gets the key's id and a note."

// OpenAPIRoutes lists the documented routes as "METHOD /v1/path".
func OpenAPIRoutes() []string {
	out := make([]string, len(apiOps))
	for i, op := range apiOps {
		out[i] = op.method + " /v1" + op.path
	}
	sort.Strings(out)
	return out
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// openAPI builds the document.
func openAPI() map[string]any {
	schemas := map[string]any{}
	errSchema := schemaOf(reflect.TypeFor[api.ErrorResponse](), schemas)
	paths := map[string]any{}
	errResp := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": errSchema}}}
	}
	for _, op := range apiOps {
		item, _ := paths["/v1"+op.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths["/v1"+op.path] = item
		}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(op.path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true,
				"schema": map[string]any{"type": "string", "pattern": `^[A-Za-z0-9._:-]{1,128}$`}})
		}
		for _, q := range op.query {
			params = append(params, map[string]any{"name": q, "in": "query", "schema": str()})
		}
		if op.method != "GET" {
			params = append(params, map[string]any{"name": "Idempotency-Key", "in": "header", "description": idempotencyDoc,
				"schema": map[string]any{"type": "string", "maxLength": maxIdempotencyKey, "pattern": `^[\x20-\x7e]+$`}})
		}
		if op.stream {
			params = append(params, map[string]any{"name": "Last-Event-ID", "in": "header", "schema": str()})
		}
		ok := map[string]any{"description": http.StatusText(op.status)}
		switch {
		case op.stream:
			ok["content"] = map[string]any{"text/event-stream": map[string]any{"schema": str()}}
		case op.resp != nil:
			schema := schemaOf(reflect.TypeOf(op.resp), schemas)
			if op.alt != nil {
				// anyOf, not oneOf: an empty list of one kind is an empty
				// list of the other too (the journal's steps and lines).
				schema = map[string]any{"anyOf": []any{schema, schemaOf(reflect.TypeOf(op.alt), schemas)}}
			}
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": schema}}
		}
		responses := map[string]any{
			itoa(op.status): ok,
			"401":           errResp("missing, invalid, revoked or expired API key (WWW-Authenticate: Bearer)"),
			"429":           errResp("rate limited, or too many streams and long-polls open for the key; see Retry-After"),
			"default":       errResp("error"),
		}
		if op.admin {
			responses["403"] = errResp("admin role required")
		}
		if strings.Contains(op.path, "{") {
			responses["404"] = errResp("not found (or another account's)")
		}
		o := map[string]any{
			"summary":     op.summary,
			"operationId": strings.ToLower(op.method) + strings.NewReplacer("/", "_", "{", "", "}", "").Replace(op.path),
			"responses":   responses,
		}
		if params != nil {
			o["parameters"] = params
		}
		if op.body != nil {
			o["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": requestSchemaOf(reflect.TypeOf(op.body), schemas)}}}
			responses["422"] = errResp("validation failed, unknown field, or Idempotency-Key reused with another request")
		}
		item[strings.ToLower(op.method)] = o
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "vmplane API", "version": "1",
			"description": "The REST API of vmplane's gateway (docs/design.md). Every route but this document takes an API key as a bearer token."},
		// Relative to where the document is served: the gateway's own origin,
		// whatever its address. The paths carry /v1 themselves.
		"servers": []any{map[string]any{"url": "/", "description": "the gateway serving this document"}},
		"paths":   paths,
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": map[string]any{"apiKey": map[string]any{"type": "http", "scheme": "bearer"}},
		},
		"security": []any{map[string]any{"apiKey": []any{}}},
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func str() map[string]any            { return map[string]any{"type": "string"} }
func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
func obj(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

var timeType = reflect.TypeOf(time.Time{})

// schemaOf renders t, a type the API answers, as JSON Schema from its json
// tags; named structs go to components and are referenced. A field is
// required when encoding/json always writes it.
func schemaOf(t reflect.Type, comps map[string]any) map[string]any {
	return schemaGen{comps: comps}.of(t)
}

// requestSchemaOf renders t, a request body type. A field is required when
// the server refuses a body without it, which the field says with the tag
// required:"true"; how the field is encoded (omitempty) says nothing of
// that. TestOpenAPIRequiredIsWhatTheServerRequires holds the tags to the
// server. A body that must change something has minProperties (see
// atLeastOneField), and a field taken under two names asks for one of them
// (eitherField).
func requestSchemaOf(t reflect.Type, comps map[string]any) map[string]any {
	return schemaGen{comps: comps, request: true}.of(t)
}

// atLeastOneField lists the request bodies the server refuses empty: an
// update that changes nothing is a 422.
var atLeastOneField = map[reflect.Type]bool{
	reflect.TypeFor[api.LeaseUpdate](): true,
}

// eitherField lists the request fields the server takes under either of two
// names, vmplane's and OpenStack Blazar's: one of them is required.
var eitherField = map[reflect.Type][][2]string{
	reflect.TypeFor[api.ReservationRequest](): {{"min_hosts", "min"}},
}

// schemaGen renders Go types as JSON Schema, for an answer or a request.
type schemaGen struct {
	comps   map[string]any
	request bool
}

func (g schemaGen) of(t reflect.Type) map[string]any {
	if t.Kind() == reflect.Pointer {
		return g.of(t.Elem())
	}
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.String:
		return str()
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
	default:
		return map[string]any{}
	}
	name := componentName(t)
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i] + "Of" + name[strings.LastIndexByte(name, '.')+1:len(name)-1]
	}
	if name != "" {
		if _, ok := g.comps[name]; ok {
			return ref(name)
		}
		g.comps[name] = map[string]any{} // breaks recursion
	}
	props := map[string]any{}
	required := g.fields(t, props)
	o := obj(props, required...)
	if g.request && atLeastOneField[t] {
		o["minProperties"] = 1
	}
	if g.request {
		var all []any
		for _, pair := range eitherField[t] {
			all = append(all, map[string]any{"anyOf": []any{
				map[string]any{"required": []string{pair[0]}}, map[string]any{"required": []string{pair[1]}}}})
		}
		switch len(all) {
		case 0:
		case 1:
			o["anyOf"] = all[0].(map[string]any)["anyOf"]
		default:
			o["allOf"] = all
		}
	}
	if name == "" {
		return o
	}
	g.comps[name] = o
	return ref(name)
}

// componentNames keeps the document's names where a Go type's name differs
// from what the document has always called it: clients generated from an
// earlier document refer to the error envelope as Error.
var componentNames = map[reflect.Type]string{
	reflect.TypeFor[api.ErrorResponse](): "Error",
	reflect.TypeFor[api.Error]():         "ErrorBody",
}

func componentName(t reflect.Type) string {
	if n, ok := componentNames[t]; ok {
		return n
	}
	return t.Name()
}

// fields adds the JSON fields of struct t to props, as encoding/json
// writes them: an embedded struct without a name in its tag lends its
// fields (HostDetail is a Host and more). It returns the names of the
// required fields: of an answer, those always written; of a request, those
// tagged required:"true".
func (g schemaGen) fields(t reflect.Type, props map[string]any) (required []string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jname, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && jname == "" && ft.Kind() == reflect.Struct {
			required = append(required, g.fields(ft, props)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if jname == "" {
			jname = f.Name
		}
		props[jname] = g.of(f.Type)
		always := !strings.Contains(opts, "omit") && f.Type.Kind() != reflect.Pointer
		if g.request && f.Tag.Get("required") == "true" || !g.request && always {
			required = append(required, jname)
		}
	}
	return required
}

// OpenAPIDocument is the document /v1/openapi.json serves, indented: what
// `vmplane openapi` writes for the linter of make check, without a stack.
func OpenAPIDocument() ([]byte, error) {
	b, err := json.MarshalIndent(openAPI(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	return append(b, '\n'), nil
}

// openAPIDoc is GET /v1/openapi.json (no key needed).
func (s *Server) openAPIDoc(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, openAPI())
	return nil
}
