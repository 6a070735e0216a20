package cephfs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Handle layout (see doc.go, "Handles"):
//
//	[0]      handleVersion
//	[1:9]    inode number, big-endian
//	[9:17]   snapshot id, big-endian (NoSnap: the live file system)
//	[17:25]  file system id (the CephFS fscid), big-endian
//	[25:33]  HMAC-SHA256(key, domain || bytes 0 to 25), truncated
const (
	handleVersion = 0xCE
	handleBody    = 25
	handleMAC     = 8
	handleLen     = handleBody + handleMAC
)

// NoSnap is CEPH_NOSNAP, the snapshot id of the live (head) objects.
const NoSnap = ^uint64(1)

// Vino names one CephFS object: inode number and snapshot id.
type Vino struct {
	Ino, Snap uint64
}

// handleCodec makes and checks handles for one export.
type handleCodec struct {
	key    []byte
	domain []byte
	fscid  uint64
}

func (hc *handleCodec) mac(body []byte) []byte {
	m := hmac.New(sha256.New, hc.key)
	m.Write(hc.domain)
	m.Write(body)
	return m.Sum(nil)[:handleMAC]
}

// encode returns the handle of v.
func (hc *handleCodec) encode(v Vino) vfs.Handle {
	h := make(vfs.Handle, handleBody, handleLen)
	h[0] = handleVersion
	binary.BigEndian.PutUint64(h[1:9], v.Ino)
	binary.BigEndian.PutUint64(h[9:17], v.Snap)
	binary.BigEndian.PutUint64(h[17:25], hc.fscid)
	return append(h, hc.mac(h)...)
}

// decode checks h and returns what it names: ErrBadHandle for a handle of
// the wrong shape, ErrStale for one this export did not issue (another
// key, domain or file system).
func (hc *handleCodec) decode(h vfs.Handle) (Vino, error) {
	if len(h) != handleLen || h[0] != handleVersion {
		return Vino{}, vfs.ErrBadHandle
	}
	if !hmac.Equal(hc.mac(h[:handleBody]), h[handleBody:]) {
		return Vino{}, vfs.ErrStale
	}
	if binary.BigEndian.Uint64(h[17:25]) != hc.fscid {
		return Vino{}, vfs.ErrStale
	}
	return Vino{Ino: binary.BigEndian.Uint64(h[1:9]), Snap: binary.BigEndian.Uint64(h[9:17])}, nil
}
