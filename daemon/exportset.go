package daemon

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/exports"
	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/billyfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
)

// exportSet is one published generation of the export table with its
// backends. Immutable.
type exportSet struct {
	table  *exports.Table
	byFSID map[uint32]*exportEntry
	byPath map[string]*exportEntry
}

type exportEntry struct {
	cfg     *exports.Export
	nfs     nfs.Export
	backend string
	reused  bool // FS belongs to the previous set too: build must not close it
}

// exportState is the daemon's live export set and what it needs to open
// backends. It implements nfs.ExportResolver, nfs.AuthorizeFunc and
// mount.Backend.
type exportState struct {
	log       *zap.Logger
	handleKey []byte
	stateDir  string
	cur       atomic.Pointer[exportSet]
	// lockGraceEnd is the NLM grace end a CephFS export opened now
	// records for the other heads (cephgrace.go); nil without locking.
	lockGraceEnd func() time.Time
	nfs          *nfs.Server // set once the NFS server exists
}

// fsidOf returns the export's fsid: fsid= or a hash of the path.
func fsidOf(e *exports.Export) uint32 {
	if len(e.Rules) > 0 && e.Rules[0].Options.FSIDSet {
		return e.Rules[0].Options.FSID
	}
	return nfs.FSIDFromPath(e.Path)
}

// backendOf names the export's backend with its settings: a reload keeps
// an export's open backend only when this is unchanged.
func backendOf(e *exports.Export) string {
	if len(e.Rules) > 0 && e.Rules[0].Options.Backend != "" {
		if b := e.Rules[0].Options.Backend; b == exports.BackendCephFS {
			return b + ":" + e.Rules[0].Options.Ceph.String()
		}
		return e.Rules[0].Options.Backend
	}
	return exports.BackendOS
}

// build opens backends for t, reusing those of prev whose path and backend
// are unchanged. It returns the new set and the entries of prev that are
// no longer used.
func (st *exportState) build(t *exports.Table, prev *exportSet) (*exportSet, []*exportEntry, error) {
	set := &exportSet{table: t, byFSID: make(map[uint32]*exportEntry), byPath: make(map[string]*exportEntry)}
	reused := make(map[*exportEntry]bool)
	for _, e := range t.Exports {
		fsid, backend := fsidOf(e), backendOf(e)
		if other, ok := set.byFSID[fsid]; ok {
			closeEntries(set.byPath)
			return nil, nil, fmt.Errorf("%sexports %s and %s have the same fsid %d", where(e), other.cfg.Path, e.Path, fsid)
		}
		async := asyncOf(e)
		if async {
			st.log.Warn("export is async: stable WRITEs and COMMIT are answered before the data reaches storage; "+
				"data clients were told is safe is lost if this server crashes", zap.String("export", e.Path))
		}
		var fs vfs.FS
		fromPrev := false
		if prev != nil {
			if old, ok := prev.byPath[e.Path]; ok && old.backend == backend && old.nfs.FSID == fsid {
				fs = old.nfs.FS
				reused[old] = true
				fromPrev = true
			}
		}
		if fs == nil {
			var err error
			fs, err = st.open(e, fsid)
			if err != nil {
				closeEntries(set.byPath)
				return nil, nil, fmt.Errorf("%sexport %s: %w", where(e), e.Path, err)
			}
		}
		stats := new(nfs.ExportStats)
		if old, ok := prev.entry(e.Path); ok {
			stats = old.nfs.Stats // the export's byte counts go on across reloads
		}
		ent := &exportEntry{cfg: e, backend: backend, reused: fromPrev, nfs: nfs.Export{FSID: fsid, Path: e.Path, FS: fs, ReadOnly: allReadOnly(e), Async: async, Stats: stats}}
		set.byFSID[fsid] = ent
		set.byPath[e.Path] = ent
	}
	var unused []*exportEntry
	if prev != nil {
		for _, old := range prev.byPath {
			if !reused[old] {
				unused = append(unused, old)
			}
		}
	}
	return set, unused, nil
}

// where is "file:line:col: " for an export read from a file, "" for
// the default export.
func where(e *exports.Export) string {
	if e.Pos.File == "" {
		return ""
	}
	return e.Pos.String() + ": "
}

// closeEntries closes the backends of a half-built set, except those
// taken over from the previous set, which is still live.
func closeEntries(m map[string]*exportEntry) {
	for _, e := range m {
		if !e.reused {
			e.nfs.FS.Close()
		}
	}
}

// asyncOf is the export's async option (the parser makes every client
// rule agree on it).
func asyncOf(e *exports.Export) bool {
	return len(e.Rules) > 0 && e.Rules[0].Options.Async
}

func allReadOnly(e *exports.Export) bool {
	for i := range e.Rules {
		if !e.Rules[i].Options.ReadOnly {
			return false
		}
	}
	return true
}

// open opens the backend of export path with this fsid. OS handles are
// bound to the fsid (nfs.HandleDomain), so a handle of one export
// relabelled with another's fsid is stale although all share the
// daemon's handle key.
func (st *exportState) open(e *exports.Export, fsid uint32) (vfs.FS, error) {
	path := e.Path
	backend := exports.BackendOS
	if len(e.Rules) > 0 && e.Rules[0].Options.Backend != "" {
		backend = e.Rules[0].Options.Backend
	}
	switch backend {
	case exports.BackendCephFS:
		return openCephFS(e.Rules[0].Options.Ceph, fsid, st.stateDir, st.cephGraceUntil(), st.log.With(zap.String("export", path)))
	case exports.BackendMem:
		return billyfs.NewMem(billyfs.Options{Logger: st.log.With(zap.String("export", path))}), nil
	case exports.BackendOS, "":
		return localfs.New(path, localfs.Options{Logger: st.log.With(zap.String("export", path)), HandleKey: st.handleKey, HandleDomain: nfs.HandleDomain(fsid)})
	}
	return nil, fmt.Errorf("unknown backend %q", backend)
}

// publish makes set current and closes the unused backends after grace.
func (st *exportState) publish(set *exportSet, unused []*exportEntry, grace time.Duration) {
	st.cur.Store(set)
	if len(unused) == 0 {
		return
	}
	time.AfterFunc(grace, func() {
		for _, e := range unused {
			if err := e.nfs.FS.Close(); err != nil {
				st.log.Warn("closing removed export", zap.String("export", e.nfs.Path), zap.Error(err))
			}
		}
	})
}

func (st *exportState) closeAll() {
	if set := st.cur.Load(); set != nil {
		for _, e := range set.byPath {
			e.nfs.FS.Close()
		}
	}
}

// ByFSID implements nfs.ExportResolver.
func (st *exportState) ByFSID(fsid uint32) (*nfs.Export, bool) {
	e, ok := st.cur.Load().byFSID[fsid]
	if !ok {
		return nil, false
	}
	return &e.nfs, true
}

// authorize implements nfs.AuthorizeFunc with the export's client rules
// (exports.Export.Authorize), answering a refusal with the nfsstat3 (and,
// for a flavor outside sec=, the RPC rejection) it calls for.
func (st *exportState) authorize(call *oncrpc.Call, e *nfs.Export) (nfs.Cred, bool, wire.Status) {
	ent, ok := st.cur.Load().byFSID[e.FSID]
	if !ok {
		return nfs.Cred{}, true, wire.ErrStale
	}
	c := exports.Caller{
		Client:      call.Conn.Remote.Addr(),
		Port:        int(call.Conn.Remote.Port()),
		Transport:   call.Conn.Transport,
		LockManager: call.Prog == nlmProgram,
		Flavor:      call.Cred.Flavor,
		HasUnix:     call.HasUnix,
	}
	if call.HasUnix {
		c.UID, c.GID, c.GIDs = call.Unix.UID, call.Unix.GID, call.Unix.GIDs()
	}
	id, refusal := ent.cfg.Authorize(&c)
	switch refusal {
	case exports.Admitted:
		return nfs.Cred{UID: id.UID, GID: id.GID, GIDs: id.GIDs}, id.ReadOnly, wire.OK
	case exports.RefusedFlavor:
		call.RejectAuth(oncrpc.AuthTooWeak)
		return nfs.Cred{}, true, wire.ErrAcces
	case exports.RefusedPort:
		return nfs.Cred{}, true, wire.ErrPerm
	}
	return nfs.Cred{}, true, wire.ErrAcces
}

// mountBackend adapts exportState to mount.Backend.
type mountBackend struct{ st *exportState }

// Exports implements mount.Backend.
func (m mountBackend) Exports(context.Context) []mount.Export { return m.st.exportList() }

// Mount implements mount.Backend.
func (m mountBackend) Mount(_ context.Context, call *oncrpc.Call, dirpath string) ([]byte, []uint32, mount.Stat) {
	return m.st.mount(call, dirpath)
}

func (st *exportState) exportList() []mount.Export {
	set := st.cur.Load()
	var out []mount.Export
	for _, e := range set.table.Exports {
		out = append(out, mount.Export{Path: e.Path, Groups: e.Groups()})
	}
	return out
}

// mount decides a MNT: the export the path mounts
// (exports.Table.ForMount), the client rule (exports.Export.AuthorizeMount),
// then the root handle or, below the root, mount.WalkDir's directory.
func (st *exportState) mount(call *oncrpc.Call, dirpath string) ([]byte, []uint32, mount.Stat) {
	set := st.cur.Load()
	e, rest := set.table.ForMount(dirpath)
	if e == nil {
		return nil, nil, mount.StatNoEnt
	}
	rule, refusal := e.AuthorizeMount(call.Conn.Remote.Addr(), int(call.Conn.Remote.Port()))
	if refusal != exports.Admitted {
		st.log.Info("mount refused: "+refusal.String(), zap.String("path", dirpath), zap.Stringer("client", call.Conn.Remote))
		return nil, nil, mount.StatAcces
	}
	ent := set.byPath[e.Path]
	if rest == "" {
		fh, ok := st.nfs.RootHandle(ent.nfs.FSID)
		if !ok {
			return nil, nil, mount.StatServerFault
		}
		return fh, rule.Options.Flavors, mount.StatOK
	}
	h, stat := mount.WalkDir(ent.nfs.FS, rest)
	if stat != mount.StatOK {
		return nil, nil, stat
	}
	return nfs.HandleFor(&ent.nfs, h), rule.Options.Flavors, mount.StatOK
}
