package nfs

import (
	"encoding/binary"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// File handle layout (nfs_fh3, RFC 1813 section 2.5: at most NFS3_FHSIZE,
// 64, bytes): a header that names the export by its fsid, then the
// backend's vfs.Handle (1 to vfs.MaxHandle bytes). The header is issued
// in one of two forms:
//
//	short, fsid < 128:  byte 0 = 0x80 | fsid                     1 byte
//	long:               byte 0 = 0x02, bytes 1-4 the fsid (BE)   5 bytes
//
// and a third is still accepted, the 8-byte header of the first layout
// (handles issued before the short form existed stay valid):
//
//	version 1:          byte 0 = 0x01, byte 1 = 0 (kind: fsid4),
//	                    bytes 2-3 zero, bytes 4-7 the fsid (BE)  8 bytes
//
// The header is short because every byte of a handle is paid once per
// entry of a READDIRPLUS reply: the Linux client lists a large directory
// with a few READDIRPLUS calls of growing size, then READDIR and LOOKUPs,
// and an entry a handle byte longer than knfsd's (whose handles are a
// 4-byte header, a 4-byte fsid and the kernel's handle) costs a whole
// READDIR round trip at 20,000 names (conformance/kernel/README.md).
//
// The server holds no handle state: a handle stays valid across restarts
// as long as the export keeps its fsid and the backend its handles.
const (
	handleShortFlag = 0x80 // short form: the fsid in the low 7 bits
	handleShortMax  = 0x7f // the largest fsid of the short form
	handleLong      = 0x02 // long form: a 4-byte fsid follows
	handleLongLen   = 5
	handleV1        = 0x01 // version 1 (accepted): kind, reserved, fsid
	handleV1Len     = 8
	handleV1Kind    = 0 // version 1's only kind: a 4-byte fsid
	maxHandle       = handleV1Len + vfs.MaxHandle
	// minHandle: a handle shorter is garbled (NFS3ERR_BADHANDLE, as
	// knfsd answers one too short for its header): the short header and
	// vfs.MinHandle (the OS backend's shortest is 8, memory 16, CephFS 33)
	minHandle = 1 + vfs.MinHandle
)

// fhBuf is stack room for one encoded handle.
type fhBuf [maxHandle]byte

// makeHandle encodes fsid and h into buf and returns the handle, or nil
// when h is too short or too long for the format.
func makeHandle(buf *fhBuf, fsid uint32, h vfs.Handle) []byte {
	if len(h) < vfs.MinHandle || len(h) > vfs.MaxHandle {
		return nil
	}
	hdr := 1
	if fsid <= handleShortMax {
		buf[0] = handleShortFlag | byte(fsid)
	} else {
		buf[0] = handleLong
		binary.BigEndian.PutUint32(buf[1:], fsid)
		hdr = handleLongLen
	}
	n := copy(buf[hdr:], h)
	return buf[:hdr+n]
}

// parseHandle splits fh into fsid and backend handle (a sub-slice of fh).
// As knfsd: a short or garbled handle is NFS3ERR_BADHANDLE, one of an
// unknown version NFS3ERR_STALE.
func parseHandle(fh []byte) (uint32, vfs.Handle, wire.Status) {
	if len(fh) < minHandle || len(fh) > maxHandle {
		return 0, nil, wire.ErrBadHandle
	}
	hdr := 1
	var fsid uint32
	switch b := fh[0]; {
	case b&handleShortFlag != 0:
		fsid = uint32(b &^ handleShortFlag)
	case b == handleLong:
		fsid, hdr = binary.BigEndian.Uint32(fh[1:]), handleLongLen
	case b == handleV1:
		if fh[1] != handleV1Kind || fh[2] != 0 || fh[3] != 0 {
			return 0, nil, wire.ErrBadHandle
		}
		fsid, hdr = binary.BigEndian.Uint32(fh[4:]), handleV1Len
	default:
		return 0, nil, wire.ErrStale
	}
	if n := len(fh) - hdr; n < vfs.MinHandle || n > vfs.MaxHandle {
		return 0, nil, wire.ErrBadHandle
	}
	return fsid, vfs.Handle(fh[hdr:]), wire.OK
}

// HandleDomain returns what the backend of the export with this fsid
// binds into its handle authenticators (localfs.Options.HandleDomain): a
// label and the fsid (laid out as the version-1 header, whatever form
// the handle's own header takes). A handle of one export relabelled with
// another's fsid then fails authentication in that export's backend
// (NFS3ERR_STALE), even when the backends share one handle key.
func HandleDomain(fsid uint32) []byte {
	var hdr [handleV1Len]byte
	hdr[0] = handleV1
	hdr[1] = handleV1Kind
	binary.BigEndian.PutUint32(hdr[4:], fsid)
	return append([]byte("gonfsrdma nfs3 handle "), hdr[:]...)
}

// RootHandle returns the file handle of the root of the export with this
// fsid (what MOUNT MNT answers), or false when there is none.
func (s *Server) RootHandle(fsid uint32) ([]byte, bool) {
	ex, ok := s.exports.ByFSID(fsid)
	if !ok {
		return nil, false
	}
	return HandleFor(ex, ex.FS.Root()), true
}

// HandleFor returns the NFS file handle of backend handle h in export e
// (nil if h does not fit the handle format).
func HandleFor(e *Export, h vfs.Handle) []byte {
	var buf fhBuf
	fh := makeHandle(&buf, e.FSID, h)
	if fh == nil {
		return nil
	}
	return append([]byte(nil), fh...)
}
