package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

const maxNameLen = 63

// validName accepts 1..63 characters of [a-z0-9-]: a name usable as a host
// name label without escaping.
func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// parseDeploy decodes and validates a deploy body. It is pure so that the
// fuzz test can drive it.
func parseDeploy(body []byte) (api.DeployRequest, error) {
	var req api.DeployRequest
	if err := decodeStrict(body, &req); err != nil {
		return api.DeployRequest{}, err
	}
	field := func(name, format string, args ...any) error {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, format, args...)
		e.Details = map[string]any{"field": name}
		return e
	}
	if !validName(req.Name) {
		return api.DeployRequest{}, field("name", "field \"name\" must be 1 to %d characters of a-z, 0-9 and -", maxNameLen)
	}
	if req.Offering == "" {
		return api.DeployRequest{}, field("offering", "field \"offering\" is required (an offering name or id)")
	}
	if len(req.Offering) > 255 {
		return api.DeployRequest{}, field("offering", "field \"offering\" is longer than 255 characters")
	}
	if req.AffinityGroup != "" && !validName(req.AffinityGroup) {
		return api.DeployRequest{}, field("affinity_group", "field \"affinity_group\" must be 1 to %d characters of a-z, 0-9 and -", maxNameLen)
	}
	return req, nil
}

// deployVM is POST /v1/vms.
func (s *Server) deployVM(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	req, err := parseDeploy(body)
	if err != nil {
		return err
	}
	account := principalOf(r.Context()).Account
	return s.submit(w, r, body, func(ctx context.Context, commandID string, now time.Time) (schemas.Record, api.Job, error) {
		off, err := s.offering(ctx, req.Offering)
		if err != nil {
			return schemas.Record{}, api.Job{}, err
		}
		ha := off.HA
		if req.HA != nil {
			ha = *req.HA
		}
		vmID := "vm-" + s.newID()
		d := &schemas.Deploy{
			VmCommand:     vmCommand(commandID, vmID, account, now),
			Name:          req.Name,
			ZoneID:        s.cfg.ZoneID,
			Offering:      off,
			HA:            ha,
			AffinityGroup: req.AffinityGroup,
		}
		return commandRecord(vmID, d), pendingJob(commandID, vmID, "Deploy", now), nil
	})
}

// offering resolves an offering name or id into the copy a command embeds;
// an unknown one is a 422 naming the field.
func (s *Server) offering(ctx context.Context, idOrName string) (schemas.Offering, error) {
	o, err := s.rm.Offering(ctx, idOrName)
	if errors.Is(err, readmodel.ErrNotFound) {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "offering %q does not exist", idOrName)
		e.Details = map[string]any{"field": "offering"}
		return schemas.Offering{}, e
	}
	if err != nil {
		return schemas.Offering{}, fmt.Errorf("read offering %s: %w", idOrName, err)
	}
	return commandOffering(o), nil
}

// commandOffering is the copy of a catalog offering that a record embeds.
func commandOffering(o readmodel.Offering) schemas.Offering {
	return schemas.Offering{
		ID: o.ID, Name: o.Name, CPU: o.CPU, MemoryMB: o.MemoryMB, HA: o.HA,
		DeploymentPlanner: o.DeploymentPlanner, HostTags: o.HostTags, PlannerMode: o.PlannerMode,
	}
}
