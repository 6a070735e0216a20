package localfs_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
)

// benchDir fills a fresh tmpfs export (name cookies) with n files of
// 100-byte names and returns the FS and the directory.
func benchDir(b *testing.B, n int) (*localfs.FS, vfs.Handle) {
	dir, err := os.MkdirTemp("/dev/shm", "rdbench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Mkdir(dir+"/d", 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		f, err := os.Create(fmt.Sprintf("%s/d/%06d-%s", dir, i, strings.Repeat("b", 93)))
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	f := newOS(b, dir, localfs.Options{})
	h, _, err := f.Lookup(vfs.Cred{}, f.Root(), "d")
	if err != nil {
		b.Fatal(err)
	}
	return f, h
}

// BenchmarkOSReadDirNameSnapshot50k: the first call of a listing of a
// 50,000-entry directory that just changed: a new sorted snapshot.
func BenchmarkOSReadDirNameSnapshot50k(b *testing.B) {
	f, h := benchDir(b, 50000)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		// Change the directory so that the snapshot is retaken.
		var err error
		if i%2 == 0 {
			_, _, err = f.Create(vfs.Cred{}, h, "touch", 0o644, true, false, [8]byte{})
		} else {
			err = f.Remove(vfs.Cred{}, h, "touch")
		}
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, _, _, err := f.ReadDir(h, 0, 0, 100); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOSReadDirNameResume50k: a resumed call of 100 entries in a
// 50,000-entry directory that changed since its snapshot (each entry is
// checked with fstatat), what every READDIR of an rm -rf costs.
func BenchmarkOSReadDirNameResume50k(b *testing.B) {
	f, h := benchDir(b, 50000)
	es, _, _, err := f.ReadDir(h, 0, 0, 10000)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Remove(vfs.Cred{}, h, es[5].Name); err != nil {
		b.Fatal(err)
	}
	cookie := es[len(es)/2].Cookie
	b.ResetTimer()
	for range b.N {
		if _, _, _, err := f.ReadDir(h, cookie, 0, 100); err != nil {
			b.Fatal(err)
		}
	}
}
