//go:build !(ceph && linux && cgo)

package cephfs

import (
	"errors"
	"strings"
	"testing"
)

// A binary without the backend refuses it with an error that says how to
// get it.
func TestNotBuilt(t *testing.T) {
	if Built {
		t.Fatal("Built is true in the stub")
	}
	_, err := New(Options{})
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "-tags ceph") {
		t.Fatalf("New: %v", err)
	}
}
