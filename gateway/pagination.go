package gateway

import (
	"net/http"
	"strconv"

	"github.com/vmplane/vmplane/readmodel"
)

const (
	defaultPageLimit = 50
	maxPageLimit     = 500
)

// page is a list request: ?limit=N&cursor=C. The cursor is opaque to
// clients: they pass back the "next" of the previous page.
type page struct {
	limit int
	after string
}

func pageOf(r *http.Request) (page, error) {
	q := r.URL.Query()
	p := page{limit: defaultPageLimit, after: q.Get("cursor")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPageLimit {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "limit must be a number from 1 to %d", maxPageLimit)
			e.Details = map[string]any{"field": "limit"}
			return page{}, e
		}
		p.limit = n
	}
	return p, nil
}

// ask reads one row more than the page holds, to know whether a next page
// exists without a count.
func (p page) ask() readmodel.Page { return readmodel.Page{Limit: p.limit + 1, After: p.after} }

// cut trims the extra row and returns the cursor of the next page.
func cutPage[T any](p page, rows []T, id func(T) string) ([]T, string) {
	if len(rows) <= p.limit {
		return rows, ""
	}
	rows = rows[:p.limit]
	return rows, id(rows[len(rows)-1])
}
