package localfs_test

import (
	"fmt"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
)

func TestOpenFileCacheCounts(t *testing.T) {
	const max = 8
	f, err := localfs.New(t.TempDir(), localfs.Options{MaxOpenFiles: max})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hs []vfs.Handle
	for i := range 20 {
		h, _, err := f.Create(vfs.Cred{}, f.Root(), fmt.Sprint(i), 0o644, true, false, [8]byte{})
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	c0 := f.OpenFileCache()
	if c0.Evictions != 20-max {
		t.Errorf("after 20 creates in a cache of %d: %d evictions, want %d", max, c0.Evictions, 20-max)
	}
	if _, err := f.GetAttr(hs[19]); err != nil { // cached
		t.Fatal(err)
	}
	c1 := f.OpenFileCache()
	if c1.Hits != c0.Hits+1 || c1.Misses != c0.Misses || c1.Evictions != c0.Evictions {
		t.Errorf("GETATTR of a cached file: %+v -> %+v, want one more hit", c0, c1)
	}
	if _, err := f.GetAttr(hs[0]); err != nil { // evicted: reopened by handle
		t.Fatal(err)
	}
	c2 := f.OpenFileCache()
	if c2.Hits != c1.Hits || c2.Misses != c1.Misses+1 || c2.Evictions != c1.Evictions+1 {
		t.Errorf("GETATTR of an evicted file: %+v -> %+v, want one more miss and eviction", c1, c2)
	}
	if c2.Open != int64(f.OpenFiles()) {
		t.Errorf("Open %d, OpenFiles %d", c2.Open, f.OpenFiles())
	}
	var _ vfs.OpenFileCacher = f
}
