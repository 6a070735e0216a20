package mount

import (
	"container/list"
	"context"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Backend is what the MOUNT server needs from the rest of the daemon: the
// export table and the root file handles. The daemon adapts its NFS server
// (which knows each export's root handle) and its exports table (which
// knows client rules) to it.
type Backend interface {
	// Exports returns the export list for EXPORT (what `showmount -e`
	// prints). Groups name the clients allowed, as exports(5) writes them.
	Exports(ctx context.Context) []Export
	// Mount decides a MNT of dirpath by the caller (call.Conn.Remote,
	// call.Conn.Secure(), call.Unix). On StatOK it returns the export's
	// root NFSv3 handle (1 to FHSIZE3 bytes, which the server copies) and
	// the flavors the client may use; an empty list means AUTH_SYS only.
	// Otherwise it returns StatNoEnt for a path that is not exported,
	// StatAcces for a refused client, StatNotDir, and so on.
	Mount(ctx context.Context, call *oncrpc.Call, dirpath string) (fh []byte, flavors []uint32, stat Stat)
}

// DefaultMaxMounts bounds the mount list kept for DUMP.
const DefaultMaxMounts = 10000

// Server is the MOUNT program: versions 3 (complete) and 1 and 2 (without
// MNT). It keeps the mount list in memory.
type Server struct {
	log     *zap.Logger
	backend Backend

	mu        sync.Mutex
	mounts    map[Entry]*list.Element // values of the list are Entry
	order     *list.List              // oldest first
	maxMounts int
}

// NewServer returns a MOUNT server over backend.
func NewServer(log *zap.Logger, backend Backend) *Server {
	return &Server{log: log, backend: backend, mounts: make(map[Entry]*list.Element), order: list.New(), maxMounts: DefaultMaxMounts}
}

// Program returns the static program table.
//
// MNT of versions 1 and 2 answers PROC_UNAVAIL: their fhstatus carries a
// 32-byte NFSv2 handle and this server speaks NFSv3 only. Their NULL, DUMP,
// UMNT, UMNTALL and EXPORT are those of version 3 (same XDR), which is what
// showmount(8) calls (it asks version 1). Version 2's MOUNTPROC_PATHCONF
// (7) is PROC_UNAVAIL.
func (s *Server) Program() *oncrpc.Program {
	v3 := []oncrpc.Procedure{
		ProcNull:    {Name: "MOUNTPROC3_NULL", Handler: null, Idempotent: true},
		ProcMnt:     {Name: "MOUNTPROC3_MNT", Handler: s.mnt, Idempotent: true, Status: true},
		ProcDump:    {Name: "MOUNTPROC3_DUMP", Handler: s.dump, Idempotent: true},
		ProcUmnt:    {Name: "MOUNTPROC3_UMNT", Handler: s.umnt, Idempotent: true},
		ProcUmntAll: {Name: "MOUNTPROC3_UMNTALL", Handler: s.umntAll, Idempotent: true},
		ProcExport:  {Name: "MOUNTPROC3_EXPORT", Handler: s.export, Idempotent: true},
	}
	v1 := []oncrpc.Procedure{
		ProcNull:    {Name: "MOUNTPROC_NULL", Handler: null, Idempotent: true},
		ProcMnt:     {Name: "MOUNTPROC_MNT"},
		ProcDump:    {Name: "MOUNTPROC_DUMP", Handler: s.dump, Idempotent: true},
		ProcUmnt:    {Name: "MOUNTPROC_UMNT", Handler: s.umnt, Idempotent: true},
		ProcUmntAll: {Name: "MOUNTPROC_UMNTALL", Handler: s.umntAll, Idempotent: true},
		ProcExport:  {Name: "MOUNTPROC_EXPORT", Handler: s.export, Idempotent: true},
	}
	statuses := make(map[uint32]string)
	for _, st := range []Stat{StatOK, StatPerm, StatNoEnt, StatIO, StatAcces, StatNotDir, StatInval, StatNameTooLong, StatNotSupp, StatServerFault} {
		statuses[uint32(st)] = st.String()
	}
	return &oncrpc.Program{
		Prog:     Prog,
		Statuses: statuses,
		Name:     "mount",
		Versions: []oncrpc.Version{
			{Vers: Vers1, Procs: v1},
			{Vers: Vers2, Procs: v1},
			{Vers: Vers3, Procs: v3},
		},
	}
}

// Mounts returns a snapshot of the mount list, oldest first.
func (s *Server) Mounts() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Entry, 0, s.order.Len())
	for e := s.order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(Entry))
	}
	return out
}

func null(context.Context, *oncrpc.Call, *oncrpc.Reply) error { return nil }

// clientHost is the mount list's name for the caller: its IP address.
func clientHost(call *oncrpc.Call) string {
	return call.Conn.Remote.Addr().Unmap().WithZone("").String()
}

// checkPath returns StatNameTooLong when a component of p is longer than
// MNTNAMLEN (no export can live there) and StatNoEnt for a NUL byte, which
// no path holds.
func checkPath(p string) Stat {
	if strings.IndexByte(p, 0) >= 0 {
		return StatNoEnt
	}
	for c := range strings.SplitSeq(p, "/") {
		if len(c) > MNTNAMLEN {
			return StatNameTooLong
		}
	}
	return StatOK
}

// mnt answers MOUNTPROC3_MNT. A dirpath longer than MNTPATHLEN is
// GARBAGE_ARGS, as from rpc.mountd, whose rpcgen decoder reads dirpath with
// xdr_string(..., MNTPATHLEN) and answers a failed decode with
// svcerr_decode.
func (s *Server) mnt(ctx context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	p, err := DecodeDirpath(call.Args)
	if err != nil {
		return oncrpc.ErrGarbageArgs
	}
	stat := checkPath(p)
	var fh []byte
	var flavors []uint32
	if stat == StatOK {
		fh, flavors, stat = s.backend.Mount(ctx, call, p)
	}
	if stat == StatOK && (len(fh) == 0 || len(fh) > FHSIZE3) {
		s.log.Error("mount backend returned a bad file handle", zap.String("path", p), zap.Int("len", len(fh)))
		stat = StatServerFault
	}
	if stat == StatOK && len(flavors) == 0 {
		flavors = []uint32{AuthSys}
	}
	host := clientHost(call)
	if stat == StatOK {
		s.add(Entry{Hostname: host, Directory: p})
	}
	if ce := s.log.Check(zap.DebugLevel, "MNT"); ce != nil {
		ce.Write(zap.String("client", host), zap.String("path", p), zap.Stringer("stat", stat))
	}
	reply.Head = AppendMountRes(reply.Head, stat, fh, flavors)
	return nil
}

// add records a mount, evicting the oldest entry when the list is full.
func (s *Server) add(e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.mounts[e]; ok {
		s.order.MoveToBack(el)
		return
	}
	for s.order.Len() >= s.maxMounts && s.order.Len() > 0 {
		old := s.order.Remove(s.order.Front()).(Entry)
		delete(s.mounts, old)
	}
	s.mounts[e] = s.order.PushBack(e)
}

func (s *Server) umnt(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
	p, err := DecodeDirpath(call.Args)
	if err != nil {
		return oncrpc.ErrGarbageArgs
	}
	e := Entry{Hostname: clientHost(call), Directory: p}
	s.mu.Lock()
	if el, ok := s.mounts[e]; ok {
		s.order.Remove(el)
		delete(s.mounts, e)
	}
	s.mu.Unlock()
	return nil
}

func (s *Server) umntAll(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
	host := clientHost(call)
	s.mu.Lock()
	for el := s.order.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(Entry); e.Hostname == host {
			s.order.Remove(el)
			delete(s.mounts, e)
		}
		el = next
	}
	s.mu.Unlock()
	return nil
}

// room reports whether n more bytes (plus the list's closing FALSE) fit the
// transport's reply limit (a UDP datagram); lists are cut short rather than
// make the reply undeliverable.
func room(call *oncrpc.Call, reply *oncrpc.Reply, n int) bool {
	max := call.MaxReply()
	return max <= 0 || len(reply.Head)+n+4 <= max
}

func (s *Server) dump(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	for _, e := range s.Mounts() {
		n := 4 + 4 + xdr.PaddedLen(len(e.Hostname)) + 4 + xdr.PaddedLen(len(e.Directory))
		if !room(call, reply, n) {
			s.log.Warn("DUMP reply cut to fit the transport", zap.Stringer("remote", call.Conn.Remote))
			break
		}
		reply.Head = AppendMountBody(reply.Head, &e)
	}
	reply.Head = xdr.AppendBool(reply.Head, false)
	return nil
}

// export answers EXPORT. Paths longer than MNTPATHLEN and group names
// longer than MNTNAMLEN are left out, since a client could not decode them.
func (s *Server) export(ctx context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	for _, ex := range s.backend.Exports(ctx) {
		if len(ex.Path) > MNTPATHLEN {
			continue
		}
		e := Export{Path: ex.Path}
		n := 4 + 4 + xdr.PaddedLen(len(e.Path)) + 4
		for _, g := range ex.Groups {
			if len(g) <= MNTNAMLEN {
				e.Groups = append(e.Groups, g)
				n += 4 + 4 + xdr.PaddedLen(len(g))
			}
		}
		if !room(call, reply, n) {
			s.log.Warn("EXPORT reply cut to fit the transport", zap.Stringer("remote", call.Conn.Remote))
			break
		}
		reply.Head = AppendExportNode(reply.Head, &e)
	}
	reply.Head = xdr.AppendBool(reply.Head, false)
	return nil
}
