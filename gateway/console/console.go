// Package console is vmplane's web console (docs/console.md): a page and
// its script and style, served by the gateway at / on the API's own
// origin. The browser signs in with an API key that it keeps in
// sessionStorage and sends as Authorization: Bearer on every call to /v1,
// so what the console shows and does is exactly what the API lets that
// key see and do; the console holds no session, no cookie and no second
// authorization of its own. It never reads the read model nor publishes a
// command itself: everything it knows it asks /v1 for, in the browser.
package console

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"path"

	"github.com/vmplane/vmplane/schemas/actions"
)

//go:embed static
var static embed.FS

// action is what the page needs to draw an action's button: its name, what
// it does, and the parameters a click must ask for.
type action struct {
	Name     string   `json:"name"`
	Doc      string   `json:"doc"`
	Required []string `json:"required,omitempty"`
}

// catalog lists the VM actions for the page, in the catalog's order, so that
// a button exists for every action and the ones a VM's allowed_actions
// leaves out are drawn disabled.
func catalog() []action {
	var out []action
	for _, a := range actions.Catalog {
		act := action{Name: a.Name, Doc: a.Doc}
		for _, p := range a.Params {
			if p.Required {
				act.Required = append(act.Required, p.Name)
			}
		}
		out = append(out, act)
	}
	return out
}

// Handler serves the console: the page at / and its assets under
// /console/. Every other path is the caller's to answer.
func Handler() http.Handler {
	page := template.Must(template.ParseFS(static, "static/index.html"))
	var buf bytes.Buffer
	// The catalog goes into a JSON <script> block: html/template writes
	// it as JSON escaped for that context, and the browser never runs it.
	if err := page.Execute(&buf, map[string]any{"Actions": catalog()}); err != nil {
		panic(err)
	}
	index := buf.Bytes()
	assets, _ := fs.Sub(static, "static")
	files := http.FileServerFS(assets)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(index)
	})
	mux.HandleFunc("GET /console/{file}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		if name == "index.html" || path.Ext(name) == "" {
			http.NotFound(w, r)
			return
		}
		secure(w)
		w.Header().Set("Cache-Control", "no-cache")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	})
	return mux
}

// secure sets the headers that keep the page to its own origin: no script,
// style or connection anywhere else, no inline script (the key in
// sessionStorage is only as safe as the page is from injection), no
// framing, no referrer.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}
