//go:build ceph && linux && cgo

package cephfs

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/internal/cephtest"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// A rename whose source does not exist must not leave the target name
// unusable. Pacific's libcephfs (16.2.15) marks the target's cached
// dentry as being renamed before it looks the source up, and returns
// ENOENT without clearing the mark when the source is missing: every
// later lookup of the target name then waits for a rename that never
// ends. Rename answers a missing source itself, without calling
// ceph_ll_rename. Each step is bounded, so the old code fails here
// instead of hanging the test binary.
func TestRenameMissingSourceLeavesTargetUsable(t *testing.T) {
	conf := cephtest.Conf(t)
	f, err := New(Options{ConfigFile: conf, Root: exportDir(t, conf)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer f.Close()
	bounded := func(what string, fn func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- fn() }()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not return in 20 s", what)
			return nil
		}
	}
	root := f.Root()
	lookupX := func() error { _, _, err := f.Lookup(vfs.Cred{}, root, "x"); return err }
	// Round 0: x does not exist (libcephfs caches a negative dentry for
	// the lookup); round 1: it does.
	for round := range 2 {
		_ = bounded("lookup x", lookupX)
		err := bounded("rename of a missing source", func() error { return f.Rename(vfs.Cred{}, root, "missing", root, "x") })
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: rename of a missing source: %v, want ENOENT", round, err)
		}
		err = bounded("lookup x after the failed rename", lookupX)
		if round == 0 && !errors.Is(err, os.ErrNotExist) || round == 1 && err != nil {
			t.Fatalf("round %d: lookup x after the failed rename: %v", round, err)
		}
		// A rename onto x still works and is seen.
		if _, _, err := f.Create(vfs.Cred{}, root, "y", 0o644, true, false, [8]byte{}); err != nil {
			t.Fatalf("create y: %v", err)
		}
		if err := bounded("rename y to x", func() error { return f.Rename(vfs.Cred{}, root, "y", root, "x") }); err != nil {
			t.Fatalf("round %d: rename y to x: %v", round, err)
		}
		if err := bounded("lookup x after rename y to x", lookupX); err != nil {
			t.Fatalf("round %d: lookup x after rename y to x: %v", round, err)
		}
	}
}
