//go:build ceph && linux && cgo

package cephfs

import (
	"sync"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/internal/cephtest"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

var (
	topOnce sync.Once
	top     *FS
	topErr  error
)

// exportDir makes a fresh directory in the test file system (through one
// mount of its root, kept for the test binary's life) and returns its
// path.
func exportDir(t testing.TB, conf string) string {
	t.Helper()
	topOnce.Do(func() { top, topErr = New(Options{ConfigFile: conf}) })
	if topErr != nil {
		t.Fatalf("mount /: %v", topErr)
	}
	name := cephtest.FreshName("t-")
	if _, _, err := top.Mkdir(vfs.Cred{}, top.Root(), name, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", name, err)
	}
	return "/" + name
}

func TestConformance(t *testing.T) {
	conf := cephtest.Conf(t)
	vfstest.RequireRoot(t)
	vfstest.RunFSTests(t, func(t *testing.T) vfs.FS {
		f, err := New(Options{ConfigFile: conf, Root: exportDir(t, conf), HandleDomain: []byte{1, 0, 0, 0, 7}})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return f
	})
}
