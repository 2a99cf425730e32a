package schemas

import (
	"context"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/linkedin/goavro/v2"
)

//go:embed avro/*.avsc avro/history/*.avsc
var avscFS embed.FS

// entry is one record type: its Go type, Avro schema text and codec.
type entry struct {
	name   string
	typ    reflect.Type
	schema string
	codec  *goavro.Codec
	// plan is set for today's schema of the type: its bodies follow the
	// Go type and take the direct path of binary.go and decode.go.
	plan *plan
}

var (
	byName        = map[string]*entry{}
	byFingerprint = map[uint64]*entry{}
	// byType finds a record type's entry from its Go type or the type's
	// pointer, for every record encoded and named: a reflect.Type's Name
	// resolves and scans the type's string each time.
	byType     = map[reflect.Type]*entry{}
	fieldCache sync.Map // reflect.Type -> []field
)

func cachedFields(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	f := fieldsOf(t)
	fieldCache.Store(t, f)
	return f
}

func init() {
	for _, r := range recordDocs {
		t := reflect.TypeOf(r.v)
		text, err := avscFS.ReadFile("avro/" + t.Name() + ".avsc")
		if err != nil {
			// The embedded file is missing only while the schemas are being
			// regenerated (go test ./schemas -update); fall back to the Go type.
			text = []byte(schemaOf(t, r.doc))
		}
		c, err := goavro.NewCodec(string(text))
		if err != nil {
			panic(fmt.Sprintf("schemas: %s.avsc: %v", t.Name(), err))
		}
		e := &entry{name: t.Name(), typ: t, schema: string(text), codec: c, plan: planOf(t)}
		byName[e.name] = e
		byFingerprint[c.Rabin] = e
		byType[t], byType[reflect.PointerTo(t)] = e, e
	}
	// Records written with an earlier version of a schema are decoded with
	// that version's codec and read into today's Go type.
	old, _ := avscFS.ReadDir("avro/history")
	for _, f := range old {
		text, _ := avscFS.ReadFile("avro/history/" + f.Name())
		c, err := goavro.NewCodec(string(text))
		if err != nil {
			panic(fmt.Sprintf("schemas: history %s: %v", f.Name(), err))
		}
		cur, ok := byName[recordName(string(text))]
		if !ok {
			panic(fmt.Sprintf("schemas: history %s: no such record", f.Name()))
		}
		if _, dup := byFingerprint[c.Rabin]; !dup {
			byFingerprint[c.Rabin] = &entry{name: cur.name, typ: cur.typ, schema: string(text), codec: c}
		}
	}
}

// Schema returns the embedded Avro schema of a record name.
func Schema(name string) (string, bool) {
	e, ok := byName[name]
	if !ok {
		return "", false
	}
	return e.schema, true
}

// New returns a pointer to a zero value of the named record type.
func New(name string) (any, bool) {
	e, ok := byName[name]
	if !ok {
		return nil, false
	}
	return reflect.New(e.typ).Interface(), true
}

// ErrUnknownType is returned for values or frames of no known record type.
var ErrUnknownType = errors.New("unknown record type")

func lookup(v any) (*entry, reflect.Value, error) {
	rv := reflect.ValueOf(v)
	if e, ok := byType[reflect.TypeOf(v)]; ok && (rv.Kind() != reflect.Pointer || !rv.IsNil()) {
		return e, reflect.Indirect(rv), nil
	}
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, rv, fmt.Errorf("encode nil %T", v)
		}
		rv = rv.Elem()
	}
	e, ok := byName[rv.Type().Name()]
	if !ok || e.typ != rv.Type() {
		return nil, rv, fmt.Errorf("encode %T: %w", v, ErrUnknownType)
	}
	return e, rv, nil
}

// Marshal encodes v with Avro single-object encoding (C3 01, CRC-64-AVRO
// fingerprint, body), which needs no registry.
func Marshal(v any) ([]byte, error) {
	e, rv, err := lookup(v)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 10, 64)
	b[0], b[1] = 0xC3, 0x01
	binary.LittleEndian.PutUint64(b[2:10], e.codec.Rabin)
	return encodeBody(b, rv, e.plan), nil
}

// Unmarshal decodes a single-object encoded record into a new value of its
// type and returns a pointer to it. For Confluent framing use a Codec.
func Unmarshal(b []byte) (any, error) { return unmarshal(b, false) }

// unmarshal is Unmarshal; lax skips the strings' rules (strings.go).
func unmarshal(b []byte, lax bool) (any, error) {
	if len(b) < 10 || b[0] != 0xC3 || b[1] != 0x01 {
		return nil, errors.New("not Avro single-object encoding")
	}
	e, ok := byFingerprint[binary.LittleEndian.Uint64(b[2:10])]
	if !ok {
		return nil, fmt.Errorf("fingerprint %x: %w", b[2:10], ErrUnknownType)
	}
	return e.decodeBody(b[10:], lax)
}

func (e *entry) decodeBody(body []byte, lax bool) (any, error) {
	if e.plan != nil {
		v, err := decodeBodyFast(body, e.plan, lax)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", e.name, err)
		}
		return v, nil
	}
	n, rest, err := e.codec.NativeFromBinary(body)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", e.name, err)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("decode %s: %d trailing bytes", e.name, len(rest))
	}
	out := reflect.New(e.typ)
	if err := fromNative(n, out.Elem(), ""); err != nil {
		return nil, fmt.Errorf("decode %s: %w", e.name, err)
	}
	if !lax {
		if err := checkValue(out.Elem(), "", false); err != nil {
			return nil, fmt.Errorf("decode %s: %w", e.name, err)
		}
	}
	return out.Interface(), nil
}

// Registry is the part of a Confluent-compatible Schema Registry the codec
// uses; schemas/confluent adapts franz-go's pkg/sr client to it, so that
// this package (and the pure processors importing it) stays free of HTTP.
type Registry interface {
	// Register returns the id of schema under subject, registering it if needed.
	Register(ctx context.Context, subject, schema string) (int, error)
	// SchemaByID returns the schema text of an id.
	SchemaByID(ctx context.Context, id int) (string, error)
}

// Codec encodes and decodes records. The zero Codec and NewCodec(nil) use
// single-object encoding; with a Schema Registry it writes the Confluent
// framing (00, 4-byte schema id, body). Decoding accepts both.
type Codec struct {
	reg Registry

	mu       sync.RWMutex
	idByName map[string]int
	byID     map[int]*entry
}

// NewCodec returns a codec; reg may be nil for single-object encoding.
func NewCodec(reg Registry) *Codec {
	return &Codec{reg: reg, idByName: map[string]int{}, byID: map[int]*entry{}}
}

// Subject is the registry subject of a record name (RecordNameStrategy).
func Subject(name string) string { return Namespace + "." + name }

// Encode encodes v in the codec's framing.
func (c *Codec) Encode(ctx context.Context, v any) ([]byte, error) {
	if c == nil || c.reg == nil {
		return Marshal(v)
	}
	e, rv, err := lookup(v)
	if err != nil {
		return nil, err
	}
	id, err := c.idFor(ctx, e)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 5, 64)
	binary.BigEndian.PutUint32(buf[1:], uint32(id))
	return encodeBody(buf, rv, e.plan), nil
}

// AppendEncode appends v, encoded in the codec's framing, to dst and
// returns the extended slice, as Encode would have returned it on its own.
// A caller encoding many values at once (a processor's changelog records of
// one transaction) packs them into one buffer instead of one allocation and
// its regrowths per value.
func (c *Codec) AppendEncode(ctx context.Context, dst []byte, v any) ([]byte, error) {
	e, rv, err := lookup(v)
	if err != nil {
		return dst, err
	}
	if c == nil || c.reg == nil {
		dst = append(dst, 0xC3, 0x01)
		dst = binary.LittleEndian.AppendUint64(dst, e.codec.Rabin)
		return encodeBody(dst, rv, e.plan), nil
	}
	id, err := c.idFor(ctx, e)
	if err != nil {
		return dst, err
	}
	dst = binary.BigEndian.AppendUint32(append(dst, 0), uint32(id))
	return encodeBody(dst, rv, e.plan), nil
}

func (c *Codec) idFor(ctx context.Context, e *entry) (int, error) {
	c.mu.RLock()
	id, ok := c.idByName[e.name]
	c.mu.RUnlock()
	if ok {
		return id, nil
	}
	id, err := c.reg.Register(ctx, Subject(e.name), e.schema)
	if err != nil {
		return 0, fmt.Errorf("register %s: %w", e.name, err)
	}
	c.mu.Lock()
	c.idByName[e.name] = id
	c.byID[id] = e
	c.mu.Unlock()
	return id, nil
}

// Decode decodes either framing and returns a pointer to the record. A
// record whose strings break the contract (strings.go) is an error.
func (c *Codec) Decode(ctx context.Context, b []byte) (any, error) { return c.decode(ctx, b, false) }

// DecodeAny is Decode without the strings' rules: for tools that show
// records as they are, dead letters included. Never for what is applied.
func (c *Codec) DecodeAny(ctx context.Context, b []byte) (any, error) { return c.decode(ctx, b, true) }

func (c *Codec) decode(ctx context.Context, b []byte, lax bool) (any, error) {
	if len(b) >= 1 && b[0] == 0x00 {
		if len(b) < 5 {
			return nil, errors.New("short Confluent frame")
		}
		id := int(binary.BigEndian.Uint32(b[1:5]))
		e, err := c.entryByID(ctx, id)
		if err != nil {
			return nil, err
		}
		return e.decodeBody(b[5:], lax)
	}
	return unmarshal(b, lax)
}

func (c *Codec) entryByID(ctx context.Context, id int) (*entry, error) {
	if c == nil || c.reg == nil {
		return nil, fmt.Errorf("schema id %d: Confluent framing needs a schema registry", id)
	}
	c.mu.RLock()
	e, ok := c.byID[id]
	c.mu.RUnlock()
	if ok {
		return e, nil
	}
	text, err := c.reg.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	w, err := goavro.NewCodec(text)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	name := w.Schema()
	e, ok = byName[recordName(name)]
	if !ok {
		return nil, fmt.Errorf("schema id %d (%s): %w", id, recordName(name), ErrUnknownType)
	}
	if w.Rabin != e.codec.Rabin {
		// Written with another version of the schema: decode with the
		// writer's codec; the native form is then read into today's type,
		// whose new fields keep their zero defaults.
		e = &entry{name: e.name, typ: e.typ, schema: text, codec: w}
	}
	c.mu.Lock()
	c.byID[id] = e
	c.mu.Unlock()
	return e, nil
}

// DecodeError names where an undecodable record was found.
type DecodeError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode %s/%d@%d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// DecodeAt decodes b and, on failure, says where the record was. It never
// panics, whatever the bytes.
func (c *Codec) DecodeAt(ctx context.Context, topic string, partition int32, offset int64, b []byte) (v any, err error) {
	return c.decodeAt(ctx, topic, partition, offset, b, false)
}

// DecodeStateAt is DecodeAt without the strings' rules, for a processor's
// own changelog: the state it wrote itself, which may hold strings an
// older vmplane accepted (a NUL in a job's parameters, before the rules).
// Refusing them would stop the processor for good at every restore.
func (c *Codec) DecodeStateAt(ctx context.Context, topic string, partition int32, offset int64, b []byte) (v any, err error) {
	return c.decodeAt(ctx, topic, partition, offset, b, true)
}

func (c *Codec) decodeAt(ctx context.Context, topic string, partition int32, offset int64, b []byte, lax bool) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, &DecodeError{topic, partition, offset, fmt.Errorf("panic: %v", r)}
		}
	}()
	v, err = c.decode(ctx, b, lax)
	if err != nil {
		return nil, &DecodeError{topic, partition, offset, err}
	}
	return v, nil
}
