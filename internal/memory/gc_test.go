package memory

import "testing"

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"", 0, false}, {"0", 0, false}, {"1234", 1234, false}, {"512B", 512, false},
		{"64KiB", 64 << 10, false}, {"300 MiB", 300 << 20, false}, {"6GiB", 6 << 30, false}, {"1TiB", 1 << 40, false},
		{"6GB", 0, true}, {"-1", 0, true}, {"lots", 0, true}, {"9999999TiB", 0, true},
	} {
		got, err := ParseBytes(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.err)
		}
	}
}
