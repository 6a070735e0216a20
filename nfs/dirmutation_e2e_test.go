package nfs_test

import (
	"os"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfs/nfstest"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Directories changed while they are listed, over TCP, on the memory
// backend and on the OS backend with both cookie schemes: offsets (the
// host's temporary directory, ext4 here) and name cookies (tmpfs). 2,500
// entries on the OS backend; 600 on the memory backend, whose directory
// GETATTR (every REMOVE's and CREATE's wcc data) reads the whole
// directory from billy, so a listing's mutations cost n squared.
const (
	mutOSEntries  = 2500
	mutMemEntries = 600
)

func TestDirMutationMem(t *testing.T) {
	nfstest.RunCases(t, dialTCP(newMemFS), nfstest.DirMutationCases(mutMemEntries))
}

func TestDirMutationOS(t *testing.T) {
	nfstest.RunCases(t, dialTCP(func(t *testing.T) vfs.FS { return newOSFS(t, t.TempDir()) }), nfstest.DirMutationCases(mutOSEntries))
}

func TestDirMutationOSTmpfs(t *testing.T) {
	nfstest.RunCases(t, dialTCP(func(t *testing.T) vfs.FS {
		dir, err := os.MkdirTemp("/dev/shm", "nfs-dirmut")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		fs := newOSFS(t, dir)
		if fs.DirCookies() != "name" {
			t.Fatalf("tmpfs export uses %q cookies, want name", fs.DirCookies())
		}
		return fs
	}), nfstest.DirMutationCases(mutOSEntries))
}
