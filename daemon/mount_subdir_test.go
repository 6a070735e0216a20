package daemon_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
)

// TestMountSubdirectory: as with mountd, MNT of a directory below an export
// returns that directory's handle under the export's rules; a file, a
// missing path, a path through a symlink or one that climbs out with ".."
// is refused.
func TestMountSubdirectory(t *testing.T) {
	dir := exportDir(t, 0o755)
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a", "file"), "x", 0, 0, 0o644)
	if err := os.Symlink("/etc", filepath.Join(dir, "a", "etc")); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, fmt.Sprintf("%s %s(rw,insecure)\n", dir, clientA))
	ctx := testCtx(t)
	mc := dialFrom(t, d.MountAddr(), clientA, false)
	nc := nfsAs(dialFrom(t, d.NFSAddr(), clientA, false), 0, 0)

	root, _ := mnt(t, mc, dir)
	sub, _ := mnt(t, mc, filepath.Join(dir, "a", "b"))
	want := lookup(t, nc, lookup(t, nc, root, "a"), "b")
	if !bytes.Equal(sub, want) {
		t.Fatalf("MNT of a subdirectory returned %x, LOOKUP gives %x", sub, want)
	}
	if _, err := nc.Getattr(ctx, sub); err != nil {
		t.Fatalf("GETATTR of the mounted subdirectory: %v", err)
	}
	wantMountStat(t, mc, filepath.Join(dir, "a", "file"), mount.StatNotDir)
	wantMountStat(t, mc, filepath.Join(dir, "a", "missing"), mount.StatNoEnt)
	wantMountStat(t, mc, filepath.Join(dir, "a", "etc"), mount.StatNotDir)
	wantMountStat(t, mc, dir+"/a/../../..", mount.StatNoEnt)
	wantMountStat(t, mc, dir+"x", mount.StatNoEnt)

	// Another client is refused below the export as at its root.
	other := dialFrom(t, d.MountAddr(), "127.0.0.3", false)
	wantMountStat(t, other, filepath.Join(dir, "a"), mount.StatAcces)
}
