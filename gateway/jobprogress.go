package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
)

// maxChildren bounds the children one job answer lists.
const maxChildren = 1000

// stepObj is what the gateway reads of a step's details: a job that
// measures its progress says "done" of "total" at each step, and a bulk
// job's first step lists its "children".
type stepObj struct {
	Done     *int     `json:"done"`
	Total    *int     `json:"total"`
	Children []string `json:"children"`
}

// progressOf fills out's progress from its last step that measures one,
// and its children from the step that lists them (their states from the
// read model; pending until it has them).
func (s *Server) progressOf(ctx context.Context, out *api.Job, steps []readmodel.JobStep) error {
	var children []string
	for _, st := range steps {
		var o stepObj
		if st.Obj == "" || json.Unmarshal([]byte(st.Obj), &o) != nil {
			continue
		}
		if o.Done != nil && o.Total != nil && *o.Total > 0 {
			out.Progress = &api.Progress{Done: *o.Done, Total: *o.Total, Percent: *o.Done * 100 / *o.Total}
		}
		if len(o.Children) > 0 {
			children = o.Children
		}
	}
	if p := out.Progress; p != nil && out.State == api.JobSucceeded {
		p.Done, p.Percent = p.Total, 100
	}
	if len(children) == 0 {
		return nil
	}
	children = children[:min(len(children), maxChildren)]
	jobs, err := s.rm.JobsByID(ctx, children)
	if err != nil {
		return fmt.Errorf("children of job %s: %w", out.ID, err)
	}
	known := make(map[string]readmodel.Job, len(jobs))
	for _, j := range jobs {
		known[j.ID] = j
	}
	out.Children = make([]api.JobChild, len(children))
	for i, id := range children {
		c := api.JobChild{ID: id, State: "pending"}
		if j, ok := known[id]; ok {
			c.VmID, c.Type, c.State = j.VmID, j.Type, j.State
		}
		out.Children[i] = c
	}
	return nil
}
