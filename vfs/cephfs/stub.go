//go:build !(ceph && linux && cgo)

package cephfs

import (
	"errors"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Built reports whether this binary has the CephFS backend.
const Built = false

// ErrNotBuilt is what New returns in a binary built without the backend.
var ErrNotBuilt = errors.New("cephfs: this gonfsrdma was built without the CephFS backend; " +
	"build it with `make build-ceph` (go build -tags ceph, needs libcephfs-dev and librados-dev)")

// FS is the CephFS backend; in this build it cannot be made.
type FS struct{ vfs.FS }

// New fails with ErrNotBuilt.
func New(Options) (*FS, error) { return nil, ErrNotBuilt }
