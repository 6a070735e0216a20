package nfsclient

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// mapped is a read-only mapping of a local file's bytes that sendFrom
// hands to the TCP transport as WRITE payloads: writev(2) then copies
// them from the page cache into the socket, one copy instead of pread's
// and writev's two. Only the kernel touches the mapping (a file truncated
// under it makes writev fail with EFAULT, never a fault in this process),
// so it is used on TCP only: the RDMA transport copies payloads into
// registered memory itself.
type mapped struct{ b []byte }

func (m *mapped) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *mapped) unmap() { unix.Munmap(m.b) }

// mapSource maps r's bytes [roff, roff+n) (to its end when n < 0) when r
// is a regular *os.File and the File's connections are TCP.
func (fl *File) mapSource(r io.ReaderAt, roff, n int64) (*mapped, bool) {
	f, ok := r.(*os.File)
	if !ok || fl.fs.proto != ProtoTCP || roff < 0 || roff%int64(os.Getpagesize()) != 0 {
		return nil, false
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	size := fi.Size() - roff
	if n >= 0 {
		if n > size {
			return nil, false // the read path reports the short source
		}
		size = n
	}
	if size <= 0 || size != int64(int(size)) {
		return nil, false
	}
	b, err := unix.Mmap(int(f.Fd()), roff, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, false
	}
	if afterMap != nil {
		afterMap()
	}
	return &mapped{b: b}, true
}

// afterMap, set by tests only, runs once a source is mapped.
var afterMap func()
