package billyfs_test

import (
	"testing"

	"github.com/go-git/go-billy/v5/memfs"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/billyfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

func TestMemDirMutation(t *testing.T) {
	newFS := func(t *testing.T) vfs.FS { return billyfs.NewMem(billyfs.Options{}) }
	vfstest.RunDirMutationTests(t, newFS, 10, 2500)
	// At 50,000 only the rm -rf pattern: filling 50,000 billy files takes
	// 30 to 50 s under the race detector (CI's go test -race), and each
	// memory-backend rename reads the whole directory from billy
	// (billyRename's prefix check: 0.3 s a rename at that size).
	vfstest.RunDirMutationPatterns(t, newFS, []string{"RemoveSeen"}, 50000)
}

// Billy filesystems can change behind the FS's back; the cookie rule
// holds for the entries the side table knows when the listing starts.
// New over an empty memfs builds the FS NewMem builds (newMemFS over
// memfs.New(), after New's root check), so the patterns run here at 10
// entries, through New; at 2,500 they would repeat TestMemDirMutation's
// run on the same code and data (70 s of a loaded CI machine's -race).
func TestMemOverBillyDirMutation(t *testing.T) {
	vfstest.RunDirMutationTests(t, func(t *testing.T) vfs.FS {
		m, err := billyfs.New(memfs.New(), billyfs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}, 10)
}
