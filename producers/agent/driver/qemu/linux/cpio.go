package linux

import (
	"fmt"
	"io"
	"sort"
)

// Mode bits of cpio entries (the st_mode the kernel's initramfs unpacker
// reads).
const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeLink = 0o120000
	modeChar = 0o020000
)

// entry is one file of an initramfs.
type entry struct {
	name         string // without a leading slash
	mode         uint32 // type and permission bits
	data         []byte // a file's content, a symlink's target
	major, minor uint32 // a device node's number
}

// archive is an initramfs being built: entries by name, written in name
// order so that the same inputs give the same bytes.
type archive struct {
	entries map[string]entry
}

func newArchive() *archive { return &archive{entries: map[string]entry{}} }

func (a *archive) dir(name string) { a.entries[name] = entry{name: name, mode: modeDir | 0o755} }

func (a *archive) file(name string, perm uint32, data []byte) {
	a.entries[name] = entry{name: name, mode: modeFile | perm, data: data}
}

func (a *archive) link(name, target string) {
	a.entries[name] = entry{name: name, mode: modeLink | 0o777, data: []byte(target)}
}

func (a *archive) char(name string, perm, major, minor uint32) {
	a.entries[name] = entry{name: name, mode: modeChar | perm, major: major, minor: minor}
}

// writeTo writes the archive in the "newc" format the kernel unpacks: a
// 110-byte ASCII header per entry, the name, the data, each padded to four
// bytes, then the trailer. Parents sort before their children, so every
// directory exists before what it holds. Times are zero and owners root:
// the archive depends on its content only.
func (a *archive) writeTo(w io.Writer) error {
	names := make([]string, 0, len(a.entries))
	for n := range a.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	ino := uint32(1)
	for _, n := range names {
		if err := writeEntry(w, a.entries[n], ino); err != nil {
			return err
		}
		ino++
	}
	return writeEntry(w, entry{name: "TRAILER!!!"}, 0)
}

func writeEntry(w io.Writer, e entry, ino uint32) error {
	nlink := uint32(1)
	if e.mode&0o170000 == modeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, e.mode, 0, 0, nlink, 0, len(e.data), 0, 0, e.major, e.minor, len(e.name)+1, 0)
	buf := make([]byte, 0, len(hdr)+len(e.name)+8+len(e.data))
	buf = append(buf, hdr...)
	buf = append(buf, e.name...)
	buf = append(buf, 0)
	buf = pad4(buf)
	buf = append(buf, e.data...)
	buf = pad4(buf)
	_, err := w.Write(buf)
	return err
}

// pad4 pads b with zeros to a multiple of four bytes; every entry starts at
// such an offset, so its own length decides the padding.
func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
