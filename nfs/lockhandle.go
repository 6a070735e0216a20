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

// PermitLock is the access check of a lock on a resolved file, as knfsd
// opens the file for lockd (nlm_fopen): read permission for a shared
// lock, write permission for an exclusive one, the owner passing
// regardless of the mode bits (NFSD_MAY_OWNER_OVERRIDE). It returns
// NFS3ERR_ACCES, or the error of reading the attributes, on refusal.
func (s *Server) PermitLock(r *Resolved, exclusive bool) wire.Status {
	a, err := r.Export.FS.GetAttr(r.Handle)
	if err != nil {
		return s.status("NLM", err)
	}
	may := uint32(mayRead)
	if exclusive {
		may = mayWrite
	}
	return permit(&r.Cred, &a, may, true)
}
