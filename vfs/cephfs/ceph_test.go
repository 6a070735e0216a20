//go:build ceph && linux && cgo

package cephfs

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

// cephConf returns the configuration of the test cluster
// (scripts/ceph-cluster.sh sets CEPH_CONF). Without one the test skips,
// except under CI=true, where it fails: CI runs `make test-ceph`, which
// starts the cluster.
func cephConf(t testing.TB) string {
	t.Helper()
	conf := os.Getenv("CEPH_CONF")
	if conf == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CEPH_CONF is not set: run the Ceph tests with `make test-ceph` (CI=true: not skipping)")
		}
		t.Skip("no Ceph cluster: run `make test-ceph`")
	}
	return conf
}

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
	b := make([]byte, 6)
	rand.Read(b)
	name := "t-" + hex.EncodeToString(b)
	if _, _, err := top.Mkdir(vfs.Cred{}, top.Root(), name, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", name, err)
	}
	return "/" + name
}

func TestConformance(t *testing.T) {
	conf := cephConf(t)
	vfstest.RequireRoot(t)
	vfstest.RunFSTests(t, func(t *testing.T) vfs.FS {
		f, err := New(Options{ConfigFile: conf, Root: exportDir(t, conf), HandleDomain: []byte{1, 0, 0, 0, 7}})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return f
	})
}
