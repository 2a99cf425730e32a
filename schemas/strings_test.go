package schemas

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// idSafe rewrites, in place, every id field of v to an id built from its
// value, so that the codec tests' random strings pass the id rule.
func idSafe(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for _, f := range cachedFields(v.Type()) {
			fv, err := v.FieldByIndexErr(f.index)
			if err != nil {
				continue // in a nil inline part
			}
			if IsIDField(f.name) {
				switch fv.Kind() {
				case reflect.String:
					fv.SetString(asID(fv.String()))
				case reflect.Slice:
					for i := range fv.Len() {
						if e := fv.Index(i); e.Kind() == reflect.String {
							e.SetString(asID(e.String()))
						}
					}
				}
				continue
			}
			idSafe(fv)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := range v.Len() {
				idSafe(v.Index(i))
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			idSafe(e)
			v.SetMapIndex(k, e)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			idSafe(v.Elem())
		}
	}
}

func asID(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !idByte[c] {
			b[i] = 'x'
		}
	}
	return string(b[:min(len(b), MaxIDLen)])
}

func TestTextRule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" when allowed, else part of the error
	}{
		{"", ""},
		{"web 1 — café ✓", ""},
		{"line one\nline two\ttabbed\r", ""},
		{"h\x00x", "control character U+0000 at byte 1"},
		{"bell\a", "control character U+0007 at byte 4"},
		{"del\x7f", "control character U+007F at byte 3"},
		{"c1\u0085", "control character U+0085 at byte 2"},
		{"bad\xff", "invalid UTF-8 at byte 3"},
		{"cut\xe2\x9c", "invalid UTF-8 at byte 3"},
		{"surrogate\xed\xa0\x80", "invalid UTF-8 at byte 9"},
	} {
		err := CheckText(tc.in)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckText(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestIDRule(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"", true},
		{"vm-0f3a", true},
		{"investigate:host-1:3:ping", true},
		{"a.b_c", true},
		{"h\x00x", false},
		{"has space", false},
		{"slash/", false},
		{"é", false},
		{strings.Repeat("a", MaxIDLen), true},
		{strings.Repeat("a", MaxIDLen+1), false},
	} {
		if got := CheckID(tc.in) == nil; got != tc.ok {
			t.Errorf("CheckID(%q) ok = %v, want %v", tc.in, got, tc.ok)
		}
	}
	if ValidID("") {
		t.Error("ValidID accepts the empty string")
	}
}

// TestDecoderRefusesBadStrings: a record whose id or text breaks the rule
// does not decode, on the direct path and through goavro (a body written
// with an older schema version), so every consumer dead-letters it.
func TestDecoderRefusesBadStrings(t *testing.T) {
	ctx := context.Background()
	c := NewCodec(nil)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"NUL in an id", &Migrate{VmCommand: VmCommand{CommandID: "c1", VmID: "vm-1"}, HostID: "h\x00x"}, "field host_id: byte 0x00 at 1"},
		{"space in an id", &Migrate{VmCommand: VmCommand{CommandID: "c1", VmID: "vm 1"}}, "field vm_id: byte 0x20 at 2"},
		{"NUL in text", &Deploy{VmCommand: VmCommand{CommandID: "c1", VmID: "vm-1"}, Name: "web\x00"}, "field name: control character U+0000"},
		{"invalid UTF-8 in a list", &Deploy{VmCommand: VmCommand{CommandID: "c1", VmID: "vm-1"}, Offering: Offering{HostTags: []string{"ok", "\xff"}}}, "field host_tags: invalid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := c.Encode(ctx, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Decode(ctx, b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestSlowPathRefusesBadStrings: the goavro path (older schema versions)
// holds the same rules as the direct decoder.
func TestSlowPathRefusesBadStrings(t *testing.T) {
	for _, tc := range []struct {
		native map[string]any
		want   string
	}{
		{map[string]any{"command_id": "c1", "vm_id": "vm-1", "host_id": "h x"}, "field host_id: byte 0x20 at 1"},
		{map[string]any{"command_id": "c1", "vm_id": "vm-1", "host_id": "h\x00x"}, "field host_id: byte 0x00 at 1"},
		{map[string]any{"command_id": "c1", "vm_id": "vm-1", "origin": "why\x00"}, "field origin: control character U+0000"},
	} {
		var m Migrate
		if err := fromNative(tc.native, reflect.ValueOf(&m).Elem(), ""); err != nil {
			t.Fatal(err)
		}
		if err := checkValue(reflect.ValueOf(&m).Elem(), "", false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkValue(%v) = %v, want an error with %q", tc.native, err, tc.want)
		}
	}
}

// TestDecodeAnyShowsWhatDecodeRefuses: tools that show records decode one
// that breaks the rules, as it is.
func TestDecodeAnyShowsWhatDecodeRefuses(t *testing.T) {
	c := NewCodec(nil)
	b, err := c.Encode(t.Context(), &Migrate{VmCommand: VmCommand{CommandID: "c1", VmID: "vm-1"}, HostID: "h\x00x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(t.Context(), b); err == nil {
		t.Fatal("Decode accepts a NUL in an id")
	}
	v, err := c.DecodeAny(t.Context(), b)
	if err != nil || v.(*Migrate).HostID != "h\x00x" {
		t.Fatalf("DecodeAny = %+v, %v", v, err)
	}
}

func TestCleanTextIsText(t *testing.T) {
	for _, in := range []string{"ok", "qemu-img: \x1b[31merror\x1b[0m", "bad\xff\xfe", "nul\x00x", "c1\u0085", "keep\ttab\nline"} {
		out := CleanText(in)
		if err := CheckText(out); err != nil {
			t.Errorf("CleanText(%q) = %q, not text: %v", in, out, err)
		}
		if CheckText(in) == nil && out != in {
			t.Errorf("CleanText changed text %q to %q", in, out)
		}
	}
}

func TestBoundIDIsAnID(t *testing.T) {
	if got := BoundID("vm-1-unmanaged-host-1"); got != "vm-1-unmanaged-host-1" {
		t.Errorf("short id = %q", got)
	}
	long := strings.Repeat("v", MaxIDLen)
	a, b := BoundID(long+"-unmanaged-h1"), BoundID(long+"-unmanaged-h2")
	if !ValidID(a) || !ValidID(b) || len(a) != MaxIDLen || a == b || !strings.HasPrefix(a, "vvv") {
		t.Errorf("long ids %q (%d), %q: want two distinct ids of %d bytes", a, len(a), b, MaxIDLen)
	}
}
