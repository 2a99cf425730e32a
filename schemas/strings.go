package schemas

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"unicode/utf8"
)

// The strings a record may hold. Every string of a record is text: valid
// UTF-8 with no control character but tab, line feed and carriage return
// (Postgres refuses NUL and invalid UTF-8 in text and jsonb, and a log line
// or a terminal should never receive the others). A field named id, *_id or
// *_ids holds ids: 1 to MaxIDLen characters of [A-Za-z0-9._:-], or empty
// where the id is optional. The decoder refuses a record that breaks either
// rule, so such a record is a dead letter wherever it is read, and the
// gateway refuses it at the edge with the same functions.

// MaxIDLen bounds an id: ids are UUIDs, host names or short names, or
// ids a processor composes of them (BoundID).
const MaxIDLen = 255

// IsIDField says whether the field (Avro or JSON name) holds ids.
func IsIDField(name string) bool {
	return name == "id" || strings.HasSuffix(name, "_id") || strings.HasSuffix(name, "_ids")
}

// ValidID says whether s is a non-empty id.
func ValidID(s string) bool { return checkID(s) == nil && s != "" }

// CheckID explains why s is not an id; the empty string passes (an
// optional id left out).
func CheckID(s string) error { return checkID(s) }

// CheckText explains why s is not text.
func CheckText(s string) error { return checkText(s) }

func checkID[T string | []byte](s T) error {
	if len(s) > MaxIDLen {
		return fmt.Errorf("an id is at most %d bytes, not %d", MaxIDLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !idByte[c] {
			return fmt.Errorf("byte %#02x at %d is not allowed in an id ([A-Za-z0-9._:-])", c, i)
		}
	}
	return nil
}

// plain is the decoder's fast path: b is an id (id) or ASCII text. Other
// strings take checkField, which explains what is wrong or passes
// non-ASCII text.
func plain(b []byte, id bool) bool {
	t := &textByte
	if id {
		if len(b) > MaxIDLen {
			return false
		}
		t = &idByte
	}
	for _, c := range b {
		if !t[c] {
			return false
		}
	}
	return true
}

// textByte holds the ASCII bytes text may hold.
var textByte = func() (t [256]bool) {
	for c := range 0x80 {
		t[c] = c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' || c == '\r'
	}
	return t
}()

var idByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == ':'
	}
	return t
}()

func checkText[T string | []byte](s T) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if textByte[c] {
			continue
		}
		if c < 0x80 {
			return fmt.Errorf("control character %U at byte %d", rune(c), i)
		}
		r, n := utf8.DecodeRune([]byte(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && n <= 1 {
			return fmt.Errorf("invalid UTF-8 at byte %d", i)
		}
		if r >= 0x80 && r <= 0x9f {
			return fmt.Errorf("control character %U at byte %d", r, i)
		}
		i += n - 1
	}
	return nil
}

// checkField applies the rule of field name to s.
func checkField[T string | []byte](name string, id bool, s T) error {
	var err error
	if id {
		err = checkID(s)
	} else {
		err = checkText(s)
	}
	if err != nil {
		return fmt.Errorf("field %s: %w", name, err)
	}
	return nil
}

// checkValue holds a decoded value to the rules, field by field (the
// goavro path; the direct decoder checks as it reads). id says that v is
// an id field's value.
func checkValue(v reflect.Value, path string, id bool) error {
	switch v.Kind() {
	case reflect.Struct:
		for _, f := range cachedFields(v.Type()) {
			fv, err := v.FieldByIndexErr(f.index)
			if err != nil {
				continue // in an inline part that is nil: zero
			}
			if err := checkValue(fv, joinPath(path, f.name), IsIDField(f.name)); err != nil {
				return err
			}
		}
	case reflect.String:
		return checkField(path, id, v.String())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := range v.Len() {
			if err := checkValue(v.Index(i), path, id); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if err := checkField(path, false, iter.Key().String()); err != nil {
				return err
			}
			if err := checkValue(iter.Value(), path, false); err != nil {
				return err
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return checkValue(v.Elem(), path, id)
		}
	}
	return nil
}

// CleanText makes s text: invalid UTF-8 becomes U+FFFD and every control
// character but tab, line feed and carriage return a space. Producers
// use it on what they did not write themselves (a command's stderr, a
// driver's error), so that a record they make is never a dead letter.
func CleanText(s string) string {
	if checkText(s) == nil {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r < 0x80 && !textByte[r] || r >= 0x80 && r <= 0x9f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// BoundID bounds an id that a processor composed of other ids (an alert
// of a VM on a host, a step of an investigation, a healing migration):
// past MaxIDLen it keeps a prefix and replaces the rest with a hash of the
// whole, so that it is still an id, still unique, and still starts with
// what it is about.
func BoundID(id string) string {
	if len(id) <= MaxIDLen {
		return id
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	sum := fmt.Sprintf("%016x", h.Sum64())
	return id[:MaxIDLen-len(sum)-1] + "-" + sum
}
