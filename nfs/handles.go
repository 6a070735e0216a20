package nfs

import (
	"encoding/binary"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// File handle layout (nfs_fh3, at most 64 bytes):
//
//	byte 0     version, handleVersion (1)
//	byte 1     kind: 0 = a 4-byte fsid follows the header
//	bytes 2-3  reserved, zero
//	bytes 4-7  fsid, big-endian: selects the Export
//	bytes 8-   the backend's vfs.Handle, 1 to vfs.MaxHandle (48) bytes
//
// The server holds no handle state: a handle stays valid across restarts
// as long as the export keeps its fsid and the backend its handles.
const (
	handleVersion   = 1
	handleKindFSID4 = 0
	handleHeader    = 8
	maxHandle       = handleHeader + vfs.MaxHandle
)

// fhBuf is stack room for one encoded handle.
type fhBuf [maxHandle]byte

// makeHandle encodes fsid and h into buf and returns the handle, or nil
// when h is empty or too long for the format.
func makeHandle(buf *fhBuf, fsid uint32, h vfs.Handle) []byte {
	if len(h) == 0 || len(h) > vfs.MaxHandle {
		return nil
	}
	buf[0] = handleVersion
	buf[1] = handleKindFSID4
	buf[2], buf[3] = 0, 0
	binary.BigEndian.PutUint32(buf[4:], fsid)
	n := copy(buf[handleHeader:], h)
	return buf[:handleHeader+n]
}

// parseHandle splits fh into fsid and backend handle (a sub-slice of fh).
// As knfsd: a short or garbled handle is NFS3ERR_BADHANDLE, one of an
// unknown version NFS3ERR_STALE.
func parseHandle(fh []byte) (uint32, vfs.Handle, wire.Status) {
	if len(fh) <= handleHeader || len(fh) > maxHandle {
		return 0, nil, wire.ErrBadHandle
	}
	if fh[0] != handleVersion {
		return 0, nil, wire.ErrStale
	}
	if fh[1] != handleKindFSID4 || fh[2] != 0 || fh[3] != 0 {
		return 0, nil, wire.ErrBadHandle
	}
	return binary.BigEndian.Uint32(fh[4:]), vfs.Handle(fh[handleHeader:]), wire.OK
}

// HandleDomain returns what the backend of the export with this fsid
// binds into its handle authenticators (localfs.Options.HandleDomain): the
// header of the export's handles, which holds the handle version and the
// fsid. A handle of one export relabelled with another's fsid then fails
// authentication in that export's backend (NFS3ERR_STALE), even when the
// backends share one handle key.
func HandleDomain(fsid uint32) []byte {
	var buf fhBuf
	buf[0] = handleVersion
	buf[1] = handleKindFSID4
	binary.BigEndian.PutUint32(buf[4:], fsid)
	return append([]byte("gonfsrdma nfs3 handle "), buf[:handleHeader]...)
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
