package gatewaytest

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// TextError is what Postgres answers a query or a row holding text it
// cannot store: a NUL, or bytes that are not UTF-8 (SQLSTATE 22021). The
// in-memory read model answers it too, so that what the gateway would send
// the real one fails here as it would there.
func TextError(texts ...string) error {
	for _, s := range texts {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf(`ERROR: invalid byte sequence for encoding "UTF8": %+q (SQLSTATE 22021)`, s)
		}
	}
	return nil
}
