package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// runDecode is `vmplane decode`: Avro records on standard input, one JSON
// object per record on standard output. The input is what kcat prints
// with `-f '%s\n'` (values separated by newlines) or a single raw value
// (`-f '%s' -c 1`, or a file). Single-object encoded values decode with
// the embedded schemas; Confluent-framed ones need --schema-registry.
func runDecode(ctx context.Context, args []string, _ *slog.Logger) error {
	f := newFlags("decode")
	registry := f.str("schema-registry", "VMPLANE_SCHEMA_REGISTRY", "", "Schema Registry URL, for Confluent-framed values")
	if err := f.Parse(args); err != nil {
		return err
	}
	codec, err := kafka.Config{RegistryURL: *registry}.Codec()
	if err != nil {
		return err
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fmt.Errorf("read standard input: %w", err)
	}
	return decodeStream(ctx, codec, in, os.Stdout)
}

// decoded is one record as `vmplane decode` prints it: the Avro record
// name and its fields under their Avro names.
type decoded struct {
	Type  string         `json:"type"`
	Value map[string]any `json:"value"`
}

// decodeStream splits in into values and writes each as a JSON line.
//
// A value may contain newline bytes, so a newline only ends a value where
// the next one can start (the single-object marker C3 01, or the
// Confluent 00), and only if the bytes before it decode as exactly one
// record: the decoders refuse trailing bytes, so a cut inside a value
// fails and the cut moves to the next candidate.
func decodeStream(ctx context.Context, codec *schemas.Codec, in []byte, out io.Writer) error {
	enc := json.NewEncoder(out)
	start := 0
	for start < len(in) {
		var firstErr error
		next := -1
		for _, end := range cuts(in, start) {
			v, err := codec.DecodeAny(ctx, in[start:end])
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			if err := enc.Encode(decoded{Type: schemas.TypeName(v), Value: avroMap(reflect.ValueOf(v))}); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			next = end + 1
			break
		}
		if next < 0 {
			return fmt.Errorf("value at byte %d: %w", start, firstErr)
		}
		start = next
	}
	return nil
}

// cuts are the possible ends of a value starting at start: before each
// newline that a value may follow, and the end of the input (without its
// final newline).
func cuts(in []byte, start int) []int {
	var out []int
	for i := start; i < len(in); {
		j := bytes.IndexByte(in[i:], '\n')
		if j < 0 {
			break
		}
		i += j
		if i+1 < len(in) && (in[i+1] == 0x00 || i+2 < len(in) && in[i+1] == 0xC3 && in[i+2] == 0x01) {
			out = append(out, i)
		}
		i++
	}
	end := len(in)
	if end > start && in[end-1] == '\n' {
		end--
	}
	return append(out, end)
}

// avroMap renders a schemas value with the Avro names of its fields,
// embedded structs (JobRef) and inline parts (VmRecord.Rare) flattened as
// Avro has them.
func avroMap(v reflect.Value) map[string]any {
	v = reflect.Indirect(v)
	out := map[string]any{}
	if v.Kind() != reflect.Struct {
		return out
	}
	for _, f := range schemas.Fields(v.Type()) {
		fv, err := v.FieldByIndexErr(f.Index)
		if err != nil { // in a nil inline part: zero
			fv = reflect.Zero(v.Type().FieldByIndex(f.Index).Type)
		}
		out[f.Name] = avroValue(fv)
	}
	return out
}

func avroValue(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return avroValue(v.Elem())
	case reflect.Struct:
		return avroMap(v)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Bytes()
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = avroValue(v.Index(i))
		}
		return out
	case reflect.Map:
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			out[fmt.Sprint(k.Interface())] = avroValue(v.MapIndex(k))
		}
		return out
	}
	return v.Interface()
}
