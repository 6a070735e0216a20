package nfs_test

import (
	"os"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfs/nfstest"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// READDIR and READDIRPLUS pages of the sizes the Linux client asks once
// it follows the FSINFO dtpref (1 MiB), over TCP, on the OS backend over
// tmpfs (name cookies, the export of the kernel rows) and, READDIRPLUS
// only (creating the files costs seconds there), over the host's
// temporary directory (offset cookies on ext4, xfs or btrfs).
func TestDirSizingOSTmpfs(t *testing.T) {
	nfstest.RunCases(t, dialTCP(func(t *testing.T) vfs.FS {
		dir, err := os.MkdirTemp("/dev/shm", "nfs-dirsize")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return newOSFS(t, dir)
	}), nfstest.DirSizingCases())
}

func TestDirSizingOS(t *testing.T) {
	nfstest.RunCases(t, dialTCP(func(t *testing.T) vfs.FS { return newOSFS(t, t.TempDir()) }), nfstest.DirSizingCases("ReaddirplusFullPage"))
}
