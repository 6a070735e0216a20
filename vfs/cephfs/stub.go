//go:build !(ceph && linux && cgo)

package cephfs

import (
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Built reports whether this binary has the CephFS backend.
const Built = false

// FS is the CephFS backend; in this build it cannot be made.
type FS struct{ vfs.FS }

// New fails with ErrNotBuilt.
func New(Options) (*FS, error) { return nil, ErrNotBuilt }
