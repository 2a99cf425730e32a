package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// Templates are records of catalog.v1 beside the offerings, under the key
// template:<id> (schemas.TemplateKey), so that an offering and a template
// of one id never replace each other in the compacted topic.

// maxTemplateGB bounds a template's size (64 TiB).
const maxTemplateGB = 64 << 10

// templateFormats are the disk image formats a host can use.
var templateFormats = []string{"qcow2", "raw"}

// parseTemplate decodes and validates a POST /v1/templates body; the id
// left out is the name.
func parseTemplate(body []byte) (api.TemplateRequest, error) {
	var req api.TemplateRequest
	if err := decodeStrict(body, &req); err != nil {
		return req, err
	}
	if req.ID == "" {
		req.ID = req.Name
	}
	switch {
	case !validName(req.Name):
		return req, fieldError("name", "field \"name\" must be 1 to %d characters of a-z, 0-9 and -", maxNameLen)
	case !validName(req.ID):
		return req, fieldError("id", "field \"id\" must be 1 to %d characters of a-z, 0-9 and -: it names the image's directory", maxNameLen)
	case req.Format != templateFormats[0] && req.Format != templateFormats[1]:
		return req, fieldError("format", "field \"format\" must be qcow2 or raw")
	case req.SizeGB <= 0 || req.SizeGB > maxTemplateGB:
		return req, fieldError("size_gb", "field \"size_gb\" must be 1..%d", maxTemplateGB)
	case req.OsType == "" || len(req.OsType) > 255:
		return req, fieldError("os_type", "field \"os_type\" must be 1 to 255 characters")
	}
	return req, nil
}

// listTemplates is GET /v1/templates (any role).
func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.rm.Templates(r.Context())
	if err != nil {
		return fmt.Errorf("list templates: %w", err)
	}
	out := api.List[api.Template]{Items: make([]api.Template, len(rows))}
	for i, t := range rows {
		out.Items[i] = templateJSON(t)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getTemplate is GET /v1/templates/{id} (any role), by id or name.
func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request) error {
	t, err := s.catalogTemplate(r, mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, templateJSON(t))
	return nil
}

// createTemplate is POST /v1/templates (admin): the template goes to
// catalog.v1 and is listed once the projector has it. A name or id that a
// template not deleted has is a 409; a deleted template's id may be
// created again.
func (s *Server) createTemplate(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	req, err := parseTemplate(body)
	if err != nil {
		return err
	}
	for _, key := range []string{req.ID, req.Name} {
		t, err := s.rm.Template(r.Context(), key)
		switch {
		case errors.Is(err, readmodel.ErrNotFound):
		case err != nil:
			return fmt.Errorf("read template %s: %w", key, err)
		case !t.Deleted:
			return errorf(http.StatusConflict, codeInvalidState, "template %q exists (id %s)", t.Name, t.ID)
		}
	}
	t := &schemas.Template{ID: req.ID, Name: req.Name, Format: req.Format, SizeMB: req.SizeGB * mbPerGB,
		OsType: req.OsType, CreatedAt: s.now().UnixMilli()}
	if err := s.publish(r.Context(), templateRecord(t)); err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/templates/"+t.ID)
	writeJSON(w, http.StatusCreated, publishedTemplate(t))
	return nil
}

// deleteTemplate is DELETE /v1/templates/{id} (admin), by id or name: the
// template is marked Deleted. VMs made of it keep their volumes (a root
// volume is an overlay of the image, which the hosts keep); no new deploy
// or rebuild may name it.
func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request) error {
	cur, err := s.catalogTemplate(r, mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	if cur.Deleted {
		return errorf(http.StatusConflict, codeInvalidState, "template %s is deleted already", cur.ID)
	}
	t := &schemas.Template{ID: cur.ID, Name: cur.Name, Format: cur.Format, SizeMB: cur.SizeMB, OsType: cur.OsType,
		Deleted: true, CreatedAt: cur.CreatedAt.UnixMilli()}
	if err := s.publish(r.Context(), templateRecord(t)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, publishedTemplate(t))
	return nil
}

func templateRecord(t *schemas.Template) schemas.Record {
	return schemas.Record{Topic: schemas.TopicCatalog, Key: schemas.TemplateKey(t.ID), Value: t}
}

// publishedTemplate is the answer to a create or delete, before the
// projector has it.
func publishedTemplate(t *schemas.Template) api.Template {
	return templateJSON(readmodel.Template{ID: t.ID, Name: t.Name, Format: t.Format, SizeMB: t.SizeMB, OsType: t.OsType,
		Deleted: t.Deleted, CreatedAt: msTime(t.CreatedAt)})
}

// catalogTemplate reads the template of an id or name, or a 404.
func (s *Server) catalogTemplate(r *http.Request, idOrName string) (readmodel.Template, error) {
	t, err := s.rm.Template(r.Context(), idOrName)
	if errors.Is(err, readmodel.ErrNotFound) {
		return t, notFound("template", idOrName)
	}
	if err != nil {
		return t, fmt.Errorf("read template %s: %w", idOrName, err)
	}
	return t, nil
}
