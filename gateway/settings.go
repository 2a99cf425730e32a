package gateway

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// Operator settings (docs/design.md §13), as CloudStack's global settings:
// admins only read and write them, since they say how the cloud watches
// hosts and places VMs. A write is a SettingChanged on settings.v1, which
// every processor applies before its next step; the catalogue
// (schemas/settings) validates it here first and in every processor again.

// listSettings is GET /v1/settings (admin): every setting of the
// catalogue with the value in effect globally, or for ?zone= and
// ?cluster=.
func (s *Server) listSettings(w http.ResponseWriter, r *http.Request) error {
	zone, cluster, err := settingScopeQuery(r)
	if err != nil {
		return err
	}
	rows, err := s.rm.Settings(r.Context(), "")
	if err != nil {
		return err
	}
	out := api.List[api.Setting]{Items: make([]api.Setting, len(settings.Catalog))}
	for i, spec := range settings.Catalog {
		out.Items[i] = settingJSON(spec, rows, zone, cluster)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getSetting is GET /v1/settings/{name} (admin), with ?zone= and ?cluster=
// as listSettings.
func (s *Server) getSetting(w http.ResponseWriter, r *http.Request) error {
	spec, zone, cluster, err := settingAt(r)
	if err != nil {
		return err
	}
	rows, err := s.rm.Settings(r.Context(), spec.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, settingJSON(spec, rows, zone, cluster))
	return nil
}

// putSetting is PUT /v1/settings/{name} (admin): it sets the value
// globally, or for the zone or the cluster of the body, and answers 202
// with the setting as it will read once projected. A value out of range
// is a 422 naming the range.
func (s *Server) putSetting(w http.ResponseWriter, r *http.Request) error {
	spec, err := settingSpec(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.SettingRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if req.Value == "" {
		return fieldError("value", "field \"value\" is required: want %s %s (DELETE sets the default again)", spec.Kind, spec.Range())
	}
	return s.changeSetting(w, r, spec, req)
}

// deleteSetting is DELETE /v1/settings/{name} (admin): the value of the
// scope of ?zone= or ?cluster= (else the global one) goes, and the next
// wider scope's, or the default, holds there.
func (s *Server) deleteSetting(w http.ResponseWriter, r *http.Request) error {
	spec, zone, cluster, err := settingAt(r)
	if err != nil {
		return err
	}
	return s.changeSetting(w, r, spec, api.SettingRequest{Zone: zone, Cluster: cluster})
}

// changeSetting checks a change against the catalogue, publishes it and
// answers with the setting as it will read.
func (s *Server) changeSetting(w http.ResponseWriter, r *http.Request, spec settings.Spec, req api.SettingRequest) error {
	scope, id := settings.Global, ""
	switch {
	case req.Zone != "" && req.Cluster != "":
		return fieldError("cluster", "give a zone or a cluster, not both: a cluster's value holds in whatever zone it is")
	case req.Zone != "":
		scope, id = settings.Zone, req.Zone
	case req.Cluster != "":
		scope, id = settings.Cluster, req.Cluster
	}
	if id != "" {
		if err := schemas.CheckID(id); err != nil {
			return fieldError(scope, "field %q: %v", scope, err)
		}
	}
	if err := schemas.CheckText(req.Value); err != nil {
		return fieldError("value", "field \"value\": %v", err)
	}
	if err := settings.Check(spec.Name, scope, id, req.Value); err != nil {
		e := fieldError("value", "%v", err)
		e.Details["range"] = spec.Range()
		return e
	}
	now := s.now()
	c := &schemas.SettingChanged{Name: spec.Name, Scope: scope, ScopeID: id, Value: req.Value,
		By: principalOf(r.Context()).Account, At: now.UnixMilli(), Caller: commandCaller(r.Context())}
	if err := s.publish(r.Context(), schemas.Record{Topic: schemas.TopicSettings, Key: settings.Key(scope, id, spec.Name), Value: c}); err != nil {
		return err
	}
	rows, err := s.rm.Settings(r.Context(), spec.Name)
	if err != nil {
		return err
	}
	rows = withChange(rows, c, now)
	writeJSON(w, http.StatusAccepted, settingJSON(spec, rows, req.Zone, req.Cluster))
	return nil
}

// withChange returns rows as the projector will leave them after c.
func withChange(rows []readmodel.Setting, c *schemas.SettingChanged, at time.Time) []readmodel.Setting {
	out := make([]readmodel.Setting, 0, len(rows)+1)
	for _, row := range rows {
		if row.Scope != c.Scope || row.ScopeID != c.ScopeID {
			out = append(out, row)
		}
	}
	if c.Value != "" {
		out = append(out, readmodel.Setting{Name: c.Name, Scope: c.Scope, ScopeID: c.ScopeID, Value: c.Value, By: c.By, At: at})
	}
	return out
}

// settingSpec returns the catalogue's row of the path's setting; an
// unknown name is a 404.
func settingSpec(r *http.Request) (settings.Spec, error) {
	name := mux.Vars(r)["name"]
	spec, ok := settings.Lookup(name)
	if !ok {
		return spec, notFound("setting", name)
	}
	return spec, nil
}

// settingAt returns the path's setting and the query's zone and cluster.
func settingAt(r *http.Request) (spec settings.Spec, zone, cluster string, err error) {
	if spec, err = settingSpec(r); err != nil {
		return spec, "", "", err
	}
	zone, cluster, err = settingScopeQuery(r)
	return spec, zone, cluster, err
}

// settingScopeQuery reads ?zone= and ?cluster=, ids or empty.
func settingScopeQuery(r *http.Request) (zone, cluster string, err error) {
	q := r.URL.Query()
	zone, cluster = q.Get("zone"), q.Get("cluster")
	for name, v := range map[string]string{"zone": zone, "cluster": cluster} {
		if v == "" {
			continue
		}
		if err := schemas.CheckID(v); err != nil {
			e := errorf(http.StatusBadRequest, codeInvalidRequest, "query parameter %q: %v", name, err)
			return "", "", e
		}
	}
	return zone, cluster, nil
}

// settingJSON renders a setting with the value in effect for a cluster of
// a zone: the cluster's, else the zone's, else the global one, else the
// default.
func settingJSON(spec settings.Spec, rows []readmodel.Setting, zone, cluster string) api.Setting {
	out := api.Setting{Name: spec.Name, Kind: spec.Kind, Default: spec.Default, Range: spec.Range(),
		Scopes: spec.Scopes, AppliedBy: spec.AppliedBy, Description: spec.Doc,
		Value: spec.Default, Scope: "default", Values: []api.SettingValue{}}
	rank := 0
	for _, row := range rows {
		if row.Name != spec.Name {
			continue
		}
		out.Values = append(out.Values, api.SettingValue{Scope: row.Scope, ScopeID: row.ScopeID, Value: row.Value, By: row.By, At: row.At.UTC()})
		k := 0
		switch {
		case row.Scope == settings.Global:
			k = 1
		case row.Scope == settings.Zone && row.ScopeID == zone:
			k = 2
		case row.Scope == settings.Cluster && row.ScopeID == cluster:
			k = 3
		}
		if k > rank {
			rank, out.Value, out.Scope = k, row.Value, row.Scope
		}
	}
	return out
}
