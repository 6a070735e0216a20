package localfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// A name-cookie snapshot taken in the timestamp tick of the directory's
// last change cannot tell a later change in that tick from none: the
// directory's ctime and mtime stay the same. The listing must then still
// check each entry, so an entry removed after the snapshot is not
// returned. The same tick is forced here by giving the kept snapshot the
// directory's times after the removal (a 4 ms jiffy made it happen in 1
// of 8 runs of the RemoveUnseen pattern at 2,500 entries).
func TestOSNameSnapshotSameTick(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := New(root, Options{NameCookies: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dh, _, err := f.Lookup(vfs.Cred{}, f.Root(), "d")
	if err != nil {
		t.Fatal(err)
	}
	first, verf, eof, err := f.ReadDir(dh, 0, 0, 5)
	if err != nil || eof || len(first) != 5 {
		t.Fatalf("first page: %d entries, eof %v, %v", len(first), eof, err)
	}
	listed := map[string]bool{}
	for _, e := range first {
		listed[e.Name] = true
	}
	var removed []string
	for i := range n {
		name := fmt.Sprintf("f%02d", i)
		if !listed[name] {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			removed = append(removed, name)
			if len(removed) == 5 {
				break
			}
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	de, err := f.acquire(dh)
	if err != nil {
		t.Fatal(err)
	}
	s := f.dirs.get(de.key)
	f.cache.release(de)
	if s == nil {
		t.Fatal("no snapshot kept after the first page")
	}
	s.ctime, s.mtime = st.Ctim, st.Mtim // the removals shared its tick
	rest, _, eof, err := f.ReadDir(dh, first[len(first)-1].Cookie, verf, 100)
	if err != nil || !eof {
		t.Fatalf("rest: eof %v, %v", eof, err)
	}
	for _, e := range rest {
		for _, r := range removed {
			if e.Name == r {
				t.Errorf("%s listed after it was removed", r)
			}
		}
	}
	if got, want := len(first)+len(rest), n+2-len(removed); got != want {
		t.Errorf("listed %d entries in all, want %d", got, want)
	}
}
