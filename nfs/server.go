package nfs

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Export is one exported file system as the NFS program sees it.
type Export struct {
	// FSID selects the export in file handles: the fsid= option, or
	// FSIDFromPath(Path). Two exports may not share one.
	FSID uint32
	// Path is the exported path, for logs and MOUNT.
	Path string
	// FS resolves the backend part of every handle of this export.
	FS vfs.FS
	// ReadOnly refuses every modifying procedure with NFS3ERR_ROFS (the
	// Authorize hook may refine it per client).
	ReadOnly bool
	// Async is the async export option: stable WRITEs and COMMIT are
	// answered without waiting for storage (see "Stability" in doc.go).
	Async bool
	// Stats counts the export's READ and WRITE bytes; nil: not counted.
	Stats *ExportStats
}

// FSIDFromPath returns a stable fsid for an export without fsid=: the
// 32-bit FNV-1a hash of its path.
func FSIDFromPath(path string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(path))
	return h.Sum32()
}

// ExportResolver finds the export a file handle's fsid names. It is called
// on every call and must be safe for concurrent use and not allocate.
type ExportResolver interface {
	ByFSID(fsid uint32) (*Export, bool)
}

// ExportList is a fixed ExportResolver.
type ExportList []*Export

// ByFSID implements ExportResolver.
func (l ExportList) ByFSID(fsid uint32) (*Export, bool) {
	for _, e := range l {
		if e.FSID == fsid {
			return e, true
		}
	}
	return nil, false
}

// Cred is the identity a call runs as, after any squashing: the backend
// runs the call's file system operations as this identity.
type Cred = vfs.Cred

// Nobody is the identity of AUTH_NONE calls under DefaultAuthorize.
const Nobody = 65534

// AuthorizeFunc decides whether call may use export e. It returns the
// identity the call runs as, whether the export is read-only for this
// caller, and wire.OK, or the nfsstat3 to answer (typically
// NFS3ERR_ACCES or NFS3ERR_PERM). It runs for every file handle a call
// names and must be safe for concurrent use; it should not allocate.
type AuthorizeFunc func(call *oncrpc.Call, e *Export) (cred Cred, readOnly bool, status wire.Status)

// DefaultAuthorize lets every caller in with its AUTH_SYS identity
// (AUTH_NONE runs as nobody) and e.ReadOnly. A uid or gid of 0xffffffff
// (vfs.InvalidID, which the kernel reads as "no change") becomes nobody,
// and a supplementary list holding it is dropped, as knfsd's
// nfsd_setuser maps invalid ids to the anonymous ones.
func DefaultAuthorize(call *oncrpc.Call, e *Export) (Cred, bool, wire.Status) {
	if !call.HasUnix {
		return Cred{UID: Nobody, GID: Nobody}, e.ReadOnly, wire.OK
	}
	c := Cred{UID: call.Unix.UID, GID: call.Unix.GID, GIDs: call.Unix.GIDs()}
	if c.UID == vfs.InvalidID {
		c.UID = Nobody
	}
	if c.GID == vfs.InvalidID {
		c.GID = Nobody
	}
	if !c.Valid() {
		c.GIDs = nil
	}
	return c, e.ReadOnly, wire.OK
}

// Config configures a Server.
type Config struct {
	// Exports resolves handles to exports. Required.
	Exports ExportResolver
	// Authorize is the access hook; nil means DefaultAuthorize.
	Authorize AuthorizeFunc
	// Log receives boundary events (I/O errors mapped to NFS3ERR_IO).
	// nil means zap.NewNop().
	Log *zap.Logger
	// BootTime seeds the write verifier; zero means time.Now(). The
	// verifier must change whenever the server restarts, so that clients
	// resend unstable writes that may have been lost.
	BootTime time.Time
}

// Server is the NFS version 3 program. It keeps no per-call state and is
// safe for concurrent use by every transport.
type Server struct {
	exports   ExportResolver
	authorize AuthorizeFunc
	log       *zap.Logger
	verf      [wire.WriteVerfSize]byte
	program   oncrpc.Program
}

// NewServer returns a server for cfg.
func NewServer(cfg Config) *Server {
	s := &Server{exports: cfg.Exports, authorize: cfg.Authorize, log: cfg.Log}
	if s.authorize == nil {
		s.authorize = DefaultAuthorize
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	boot := cfg.BootTime
	if boot.IsZero() {
		boot = time.Now()
	}
	binary.BigEndian.PutUint64(s.verf[:], uint64(boot.UnixNano()))
	s.program = oncrpc.Program{
		Prog:     wire.Program,
		Name:     "nfs",
		Statuses: wire.StatusNames(),
		Versions: []oncrpc.Version{{
			Vers:  wire.Version,
			Procs: s.procedures(),
		}},
	}
	return s
}

// Program returns the static table of NFS program 100003 version 3 for
// oncrpc.NewDispatcher.
func (s *Server) Program() *oncrpc.Program { return &s.program }

// WriteVerifier returns the verifier WRITE and COMMIT report.
func (s *Server) WriteVerifier() [wire.WriteVerfSize]byte { return s.verf }

// procedures is the NFSv3 procedure table indexed by procedure number
// (RFC 1813 section 3). Non-idempotent procedures go through the
// duplicate request cache. Everything but READ, WRITE and COMMIT is
// Quick (no fsync, no bulk data): RPC-over-RDMA runs those calls on the
// completion goroutine. A REMOVE or a truncating SETATTR of a huge file
// waits while the filesystem frees its blocks, holding up that
// connection's later calls, as it would hold one knfsd thread.
func (s *Server) procedures() []oncrpc.Procedure {
	t := [wire.NumProcs]oncrpc.Procedure{
		wire.ProcNull:        {Handler: s.null, Idempotent: true, Quick: true},
		wire.ProcGetattr:     {Handler: s.getattr, Idempotent: true, Quick: true},
		wire.ProcSetattr:     {Handler: s.setattr, Quick: true},
		wire.ProcLookup:      {Handler: s.lookup, Idempotent: true, Quick: true},
		wire.ProcAccess:      {Handler: s.access, Idempotent: true, Quick: true},
		wire.ProcReadlink:    {Handler: s.readlink, Idempotent: true, Quick: true},
		wire.ProcRead:        {Handler: s.read, Idempotent: true},
		wire.ProcWrite:       {Handler: s.write, Idempotent: true},
		wire.ProcCreate:      {Handler: s.create, Quick: true},
		wire.ProcMkdir:       {Handler: s.mkdir, Quick: true},
		wire.ProcSymlink:     {Handler: s.symlink, Quick: true},
		wire.ProcMknod:       {Handler: s.mknod, Quick: true},
		wire.ProcRemove:      {Handler: s.remove, Quick: true},
		wire.ProcRmdir:       {Handler: s.rmdir, Quick: true},
		wire.ProcRename:      {Handler: s.rename, Quick: true},
		wire.ProcLink:        {Handler: s.link, Quick: true},
		wire.ProcReaddir:     {Handler: s.readdir, Idempotent: true, Quick: true},
		wire.ProcReaddirplus: {Handler: s.readdirplus, Idempotent: true, Quick: true},
		wire.ProcFsstat:      {Handler: s.fsstat, Idempotent: true, Quick: true},
		wire.ProcFsinfo:      {Handler: s.fsinfo, Idempotent: true, Quick: true},
		wire.ProcPathconf:    {Handler: s.pathconf, Idempotent: true, Quick: true},
		wire.ProcCommit:      {Handler: s.commit, Idempotent: true},
	}
	for i := range t {
		t[i].Name = wire.ProcNames[i]
		t[i].Status = i != wire.ProcNull // every result but NULL's begins with nfsstat3
	}
	return t[:]
}

// req is what a handler knows about one file handle after resolve.
type req struct {
	ex   *Export
	fs   vfs.FS
	h    vfs.Handle
	cred Cred
	ro   bool
}

// resolve decodes fh, finds its export, runs the Authorize hook and fills
// rq. A status other than OK is the procedure's answer.
func (s *Server) resolve(call *oncrpc.Call, fh []byte, rq *req) wire.Status {
	fsid, h, st := parseHandle(fh)
	if st != wire.OK {
		return st
	}
	ex, ok := s.exports.ByFSID(fsid)
	if !ok {
		return wire.ErrStale
	}
	cred, ro, st := s.authorize(call, ex)
	if st != wire.OK {
		return st
	}
	if !cred.Valid() {
		// An Authorize hook must map invalid ids; refusing is the safe
		// answer when one did not.
		return wire.ErrAcces
	}
	*rq = req{ex: ex, fs: ex.FS, h: h, cred: cred, ro: ro}
	return wire.OK
}

func (s *Server) null(ctx context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	return nil
}
