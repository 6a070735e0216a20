//go:build ceph && linux && cgo

package cephfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A cluster that does not answer fails New within MountTimeout (plus
// libcephfs's own slack), instead of libcephfs's default five minutes.
// The bound is far from both (60 s: a machine at load 20 stretches the
// slack, and only the five minutes would mean the timeout was ignored).
func TestMountTimeout(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "ceph.conf")
	// Port 9 of loopback: nothing listens there.
	if err := os.WriteFile(conf, []byte("[global]\nmon host = 127.0.0.1:9\nauth client required = none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	f, err := New(Options{ConfigFile: conf, MountTimeout: 2 * time.Second})
	took := time.Since(t0)
	if err == nil {
		f.Close()
		t.Fatal("New succeeded without a cluster")
	}
	if took > 60*time.Second {
		t.Errorf("New failed after %v with MountTimeout 2s: %v", took, err)
	}
	t.Logf("New failed after %v: %v", took.Round(time.Millisecond), err)
}
