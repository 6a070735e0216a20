package nfs

import (
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Resolved is an NFS file handle resolved for a call of another program
// that names NFS handles (NLM): the export, the backend handle, and what
// the Authorize hook decided for the caller.
type Resolved struct {
	Export   *Export
	Handle   vfs.Handle
	Cred     Cred
	ReadOnly bool
}

// ResolveHandle decodes fh, finds its export and runs the Authorize hook,
// exactly as for an NFS call naming fh. A status other than OK refuses
// the call (NFS3ERR_BADHANDLE, NFS3ERR_STALE, NFS3ERR_ACCES, ...).
// Handle aliases fh.
func (s *Server) ResolveHandle(call *oncrpc.Call, fh []byte) (Resolved, wire.Status) {
	var rq req
	if st := s.resolve(call, fh, &rq); st != wire.OK {
		return Resolved{}, st
	}
	return Resolved{Export: rq.ex, Handle: rq.h, Cred: rq.cred, ReadOnly: rq.ro}, wire.OK
}
