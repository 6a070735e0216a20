package mount_test

import (
	"bytes"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/billyfs"
)

// TestWalkDir: a directory below the export root resolves to its handle;
// a file or symbolic link on the way or at the end is NOTDIR; a missing
// name, or an empty, "." or ".." component, is NOENT.
func TestWalkDir(t *testing.T) {
	fs := billyfs.NewMem(billyfs.Options{})
	defer fs.Close()
	root := fs.Root()
	a, _, err := fs.Mkdir(vfs.Cred{}, root, "a", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := fs.Mkdir(vfs.Cred{}, a, "b", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fs.Create(vfs.Cred{}, a, "file", 0o644, true, false, [8]byte{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fs.Symlink(vfs.Cred{}, a, "link", "b", 0o777); err != nil {
		t.Fatal(err)
	}
	if h, st := mount.WalkDir(fs, "a/b"); st != mount.StatOK || !bytes.Equal(h, b) {
		t.Errorf("WalkDir(a/b) = %x, %v; want %x", h, st, b)
	}
	for rel, want := range map[string]mount.Stat{
		"a/file":      mount.StatNotDir,
		"a/file/x":    mount.StatNotDir,
		"a/link":      mount.StatNotDir,
		"a/link/x":    mount.StatNotDir,
		"a/missing":   mount.StatNoEnt,
		"a//b":        mount.StatNoEnt,
		"a/./b":       mount.StatNoEnt,
		"a/../a":      mount.StatNoEnt,
		"..":          mount.StatNoEnt,
		"":            mount.StatNoEnt,
		"a/b/missing": mount.StatNoEnt,
	} {
		if h, st := mount.WalkDir(fs, rel); st != want || h != nil {
			t.Errorf("WalkDir(%q) = %x, %v; want %v", rel, h, st, want)
		}
	}
}
