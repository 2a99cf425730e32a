package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// filter is a list's filter: a flag that becomes the query parameter of
// the same name (gateway/openapi.go lists each list's).
type filter struct {
	name, usage string
	// param is the query parameter, when it is not the flag's name (a
	// flag that would shadow a global one, such as --key).
	param string
}

// filterFlags defines a flag per filter; the query holds those given.
func filterFlags(fs *pflag.FlagSet, filters ...filter) url.Values {
	q := url.Values{}
	for _, f := range filters {
		param := f.param
		if param == "" {
			param = f.name
		}
		fs.Var(queryValue{q, param}, f.name, f.usage)
	}
	return q
}

// queryValue is a flag whose value is a query parameter.
type queryValue struct {
	q    url.Values
	name string
}

func (v queryValue) String() string { return v.q.Get(v.name) }
func (v queryValue) Type() string   { return "string" }

func (v queryValue) Set(s string) error {
	v.q.Set(v.name, s)
	return nil
}

// all follows the next cursors of a list endpoint; path may carry the
// list's filters as its query.
func all[T any](ctx context.Context, c *client, path string) ([]T, error) {
	var out []T
	path, filters, _ := strings.Cut(path, "?")
	q, err := url.ParseQuery(filters)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", path, err)
	}
	q.Set("limit", "500")
	for {
		var page api.List[T]
		if err := c.call(ctx, http.MethodGet, path, q, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out, nil
		}
		q.Set("cursor", page.Next)
	}
}

// listAll fetches every page of path and prints the rows: as JSON (an empty
// list of raw resources prints []), or as the table.
func listAll[T any](ctx context.Context, a *cli, path string, table func(w io.Writer, rows []T) error) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	rows, err := all[T](ctx, a.c, path)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []T{} // an empty list prints [], not null
	}
	var out any = rows
	raw, _ := json.Marshal(out)
	return a.emit(raw, func(w io.Writer) error { return table(w, rows) })
}
