package schemas

import "strings"

// Part is one part of a state written to its changelog in parts (a
// processor's state too large to rewrite whole per transaction, as a
// zone's placement state): its name and value, one of this package's
// records, or nil for a part that is gone (a tombstone).
//
// The part named "" is the state's header, written under the state's key
// itself; every other part is written under PartKey(key, name), on the
// same changelog partition as the key.
type Part struct {
	Name  string
	Value any
}

// partSeparator ends the state key in a part's changelog key. A NUL is in
// no id: every id of the API is a Postgres text value, which refuses it.
const partSeparator = "\x00"

// PartKey is the changelog key of part name of the state under key.
func PartKey(key, name string) string {
	if name == "" {
		return key
	}
	return key + partSeparator + name
}

// SplitPartKey is PartKey's inverse: the state key and the part's name,
// "" for a key without a part (a header or a whole state).
func SplitPartKey(k string) (key, name string) {
	key, name, _ = strings.Cut(k, partSeparator)
	return key, name
}

// AppendPartKey appends PartKey(key, name) to dst.
func AppendPartKey(dst []byte, key, name string) []byte {
	dst = append(dst, key...)
	if name == "" {
		return dst
	}
	return append(append(dst, partSeparator...), name...)
}
