// Package cephtest holds what the Ceph tests (build tag ceph) of several
// packages share: the test cluster's configuration and names for fresh
// directories in its file system. It needs no libcephfs itself.
package cephtest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
)

// Conf returns the test cluster's configuration file, $CEPH_CONF (set by
// scripts/ceph-cluster.sh, which `make test-ceph` runs). Without one the
// test skips, except under CI=true, where it fails: CI runs `make
// test-ceph`, which starts the cluster.
func Conf(t testing.TB) string {
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

// FreshName is prefix and 12 random hex digits: a name for a directory of
// the test file system that no other test run uses.
func FreshName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
