package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
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
	return req, checkDeployStorage(req)
}

// maxNics bounds the networks a deploy names: the QEMU driver gives a
// guest at most 5 NICs (device ids 0..4).
const maxNics = 5

// checkDeployStorage checks a deploy's template, disks and networks as far
// as the body alone can say.
func checkDeployStorage(req api.DeployRequest) error {
	switch {
	case len(req.Template) > 255:
		return fieldError("template", "field \"template\" is longer than 255 characters")
	case req.RootDiskGB < 0 || req.RootDiskGB > maxTemplateGB:
		return fieldError("root_disk_gb", "field \"root_disk_gb\" must be 0..%d (0: the template's size)", maxTemplateGB)
	case req.RootDiskGB > 0 && req.Template == "":
		return fieldError("root_disk_gb", "field \"root_disk_gb\" needs a template: a VM without one has no root volume")
	case req.DataDiskGB < 0 || req.DataDiskGB > maxTemplateGB:
		return fieldError("data_disk_gb", "field \"data_disk_gb\" must be 0..%d (0: no data volume)", maxTemplateGB)
	case len(req.Networks) > maxNics:
		return fieldError("networks", "field \"networks\" names more than %d networks", maxNics)
	}
	for i, n := range req.Networks {
		if n == "" || len(n) > 255 || slices.Contains(req.Networks[:i], n) {
			return fieldError("networks", "field \"networks\" must name each network once, by a name or id of 1 to 255 characters")
		}
	}
	return nil
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
		cat, err := s.offeringRow(ctx, req.Offering)
		if err != nil {
			return schemas.Record{}, api.Job{}, err
		}
		off := commandOffering(cat)
		ha := off.HA
		if req.HA != nil {
			ha = *req.HA
		}
		vmID := "vm-" + s.newID()
		d := &schemas.Deploy{
			VmCommand:     vmCommand(ctx, commandID, vmID, account, now),
			Name:          req.Name,
			ZoneID:        s.cfg.ZoneID,
			Offering:      off,
			HA:            ha,
			AffinityGroup: req.AffinityGroup,
			DataDiskMB:    req.DataDiskGB * mbPerGB,
			StorageTags:   cat.StorageTags,
		}
		if d.Template, d.RootSizeMB, err = s.deployTemplate(ctx, req); err != nil {
			return schemas.Record{}, api.Job{}, err
		}
		if d.NetworkIDs, err = s.deployNetworks(ctx, req.Networks); err != nil {
			return schemas.Record{}, api.Job{}, err
		}
		return commandRecord(vmID, d), pendingJob(ctx, commandID, vmID, "Deploy", now), nil
	})
}

// offering resolves an offering name or id into the copy a command embeds;
// an unknown one is a 422 naming the field.
func (s *Server) offering(ctx context.Context, idOrName string) (schemas.Offering, error) {
	o, err := s.offeringRow(ctx, idOrName)
	return commandOffering(o), err
}

// offeringRow is the read model's offering of a name or id; an unknown
// one is a 422 naming the field.
func (s *Server) offeringRow(ctx context.Context, idOrName string) (readmodel.Offering, error) {
	o, err := s.rm.Offering(ctx, idOrName)
	if errors.Is(err, readmodel.ErrNotFound) {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "offering %q does not exist", idOrName)
		e.Details = map[string]any{"field": "offering"}
		return readmodel.Offering{}, e
	}
	if err != nil {
		return readmodel.Offering{}, fmt.Errorf("read offering %s: %w", idOrName, err)
	}
	return o, nil
}

// commandOffering is the copy of a catalog offering that a record embeds.
func commandOffering(o readmodel.Offering) schemas.Offering {
	return schemas.Offering{
		ID: o.ID, Name: o.Name, CPU: o.CPU, MemoryMB: o.MemoryMB, HA: o.HA,
		DeploymentPlanner: o.DeploymentPlanner, HostTags: o.HostTags, PlannerMode: o.PlannerMode,
	}
}

// deployTemplate looks up a deploy's template (none: no root volume) and
// sizes its root volume; a template unknown or deleted, or a root disk
// smaller than its image, is a 422 naming the field.
func (s *Server) deployTemplate(ctx context.Context, req api.DeployRequest) (schemas.Template, int64, error) {
	if req.Template == "" {
		return schemas.Template{}, 0, nil
	}
	t, err := s.template(ctx, "template", req.Template)
	if err != nil {
		return schemas.Template{}, 0, err
	}
	root := req.RootDiskGB * mbPerGB
	if root > 0 && root < t.SizeMB {
		return schemas.Template{}, 0, fieldError("root_disk_gb", "field \"root_disk_gb\" is below template %s's size (%d GiB)", t.ID, (t.SizeMB+mbPerGB-1)/mbPerGB)
	}
	return t, root, nil
}

// template resolves a template's name or id, not deleted, into the copy a
// command embeds; otherwise a 422 naming field.
func (s *Server) template(ctx context.Context, field, idOrName string) (schemas.Template, error) {
	t, err := s.rm.Template(ctx, idOrName)
	if errors.Is(err, readmodel.ErrNotFound) || err == nil && t.Deleted {
		return schemas.Template{}, fieldError(field, "template %q does not exist (GET /v1/templates lists them)", idOrName)
	}
	if err != nil {
		return schemas.Template{}, fmt.Errorf("read template %s: %w", idOrName, err)
	}
	return schemas.Template{ID: t.ID, Name: t.Name, Format: t.Format, SizeMB: t.SizeMB, OsType: t.OsType,
		CreatedAt: t.CreatedAt.UnixMilli()}, nil
}

// deployNetworks resolves the networks a deploy names into their ids; none
// named is the zone's default network, if it has one. An unknown network
// is a 422 naming the field.
func (s *Server) deployNetworks(ctx context.Context, names []string) ([]string, error) {
	if len(names) == 0 {
		nets, err := s.rm.Networks(ctx, s.cfg.ZoneID)
		if err != nil {
			return nil, fmt.Errorf("list networks: %w", err)
		}
		for _, n := range nets {
			if n.Default {
				return []string{n.ID}, nil
			}
		}
		return nil, nil
	}
	ids := make([]string, 0, len(names))
	for _, name := range names {
		n, err := s.rm.Network(ctx, s.cfg.ZoneID, name)
		if errors.Is(err, readmodel.ErrNotFound) || err == nil && (!n.Applied || n.ZoneID != s.cfg.ZoneID) {
			return nil, fieldError("networks", "network %q does not exist in zone %s (GET /v1/networks lists them)", name, s.cfg.ZoneID)
		}
		if err != nil {
			return nil, fmt.Errorf("read network %s: %w", name, err)
		}
		if slices.Contains(ids, n.ID) {
			return nil, fieldError("networks", "field \"networks\" names network %s twice", n.ID)
		}
		ids = append(ids, n.ID)
	}
	return ids, nil
}
