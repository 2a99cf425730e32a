// Package confluent adapts franz-go's Schema Registry client (pkg/sr) to
// schemas.Registry, for the Confluent framing. It owns nothing else.
package confluent

import (
	"context"

	"github.com/twmb/franz-go/pkg/sr"
)

// Registry is a schemas.Registry over a Schema Registry client.
type Registry struct{ cl *sr.Client }

// New returns a registry for the Schema Registry at url.
func New(url string) (*Registry, error) {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		return nil, err
	}
	return &Registry{cl: cl}, nil
}

// Register registers an Avro schema under subject (or finds it) and returns its id.
func (r *Registry) Register(ctx context.Context, subject, schema string) (int, error) {
	ss, err := r.cl.CreateSchema(ctx, subject, sr.Schema{Schema: schema, Type: sr.TypeAvro})
	if err != nil {
		return 0, err
	}
	return ss.ID, nil
}

// SchemaByID returns the schema text of an id.
func (r *Registry) SchemaByID(ctx context.Context, id int) (string, error) {
	s, err := r.cl.SchemaByID(ctx, id)
	if err != nil {
		return "", err
	}
	return s.Schema, nil
}
