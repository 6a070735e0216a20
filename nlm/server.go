package nlm

import (
	"context"
	"errors"
	"math"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/locks"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// File is a lockable file a handle resolved to.
type File struct {
	// Key names the file among every export, stably for as long as the
	// file exists: KeyPrefix(fsid) followed by the backend handle.
	Key string
	FS  vfs.FS
	// Handle is the backend's handle of the file.
	Handle vfs.Handle
	// ReadOnly: the caller may not write the file (a read-only export);
	// exclusive locks are refused with NLM4_ROFS.
	ReadOnly bool
}

// KeyPrefix is the start of the Key of every file of export fsid.
func KeyPrefix(fsid uint32) string {
	return string([]byte{byte(fsid >> 24), byte(fsid >> 16), byte(fsid >> 8), byte(fsid)})
}

// Resolver turns an NLM call's file handle into a File, with the same
// export authorization as an NFS call naming the handle and, as the Linux
// server opens the file for its lock manager, the caller's permission to
// read it (write it, for exclusive). A status other than Granted refuses
// the call (StaleFH for a handle naming no file, Failed for a caller the
// export or the file's permissions refuse).
type Resolver interface {
	ResolveLock(call *oncrpc.Call, fh []byte, exclusive bool) (File, Stat)
}

// Host is a client that holds or waits for locks, as the status monitor
// records it.
type Host struct {
	// Key is the lock owners' host part: caller_name and address.
	Key string
	// Name is the caller_name the client sent.
	Name string
	// Addr is the client's address; Local the server address it reached
	// (status notifications go from there, as the client mounted it).
	Addr, Local netip.Addr
}

// Monitor is the status monitor (NSM) as the lock manager uses it.
type Monitor interface {
	// Monitor records h durably before the first lock is granted to it,
	// so that after a server crash h is told to reclaim.
	Monitor(h Host) error
	// Unmonitor forgets a host that holds nothing any more.
	Unmonitor(key string)
	// InGrace reports whether the grace period after a (re)start is on:
	// only reclaims succeed then.
	InGrace() bool
}

// Config configures a Server.
type Config struct {
	Files Resolver
	// Monitor is the status monitor; nil means no monitoring and no
	// grace period.
	Monitor Monitor
	Log     *zap.Logger
	// MaxLocks bounds locks + blocked requests + shares (0: 1<<16).
	MaxLocks int
	// ClientPortmapPort is the port of the clients' rpcbind, where the
	// server finds their NLM for callbacks (0: 111). Tests that run the
	// client side on the server's host use another.
	ClientPortmapPort int
	// GrantRetry is the interval at which an unanswered GRANTED_MSG is
	// sent again (0: 10 s); GrantAttempts bounds the sends (0: 30). The
	// lock stays granted after the last: the client re-polls its
	// blocked LOCK every 30 s and gets GRANTED.
	GrantRetry    time.Duration
	GrantAttempts int
	// CallbackTimeout bounds each callback RPC (0: 5 s).
	CallbackTimeout time.Duration
	// MachineName goes into the AUTH_SYS credential of callbacks.
	MachineName string
}

// Server is the NLM program, versions 1, 3 and 4, over a lock table.
type Server struct {
	cfg   Config
	log   *zap.Logger
	table *locks.Table
	prog  oncrpc.Program

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	hosts   map[string]*Host     // by Key
	watched map[string]bool      // monitored hosts
	seen    map[string]time.Time // last request of each host
	grants  map[uint64]*block
	nextID  atomic.Uint64

	callbacks chan struct{} // semaphore of async callbacks
}

// block is a blocked LOCK: what the GRANTED callback needs.
type block struct {
	id        uint64
	file      string
	lock      locks.Lock
	args      TestArgs // copied out of the call: the GRANTED_MSG arguments
	vers      uint32
	transport oncrpc.Transport
	remote    netip.Addr
	local     netip.Addr
	answered  chan Stat // GRANTED_RES, buffered 1
}

// maxHosts bounds the client hosts known at once (each new one is a
// durable write of the status monitor's file); a request from one more is
// NLM4_DENIED_NOLOCKS.
const maxHosts = 4096

// NewServer returns a server; Close stops its callbacks and timers.
func NewServer(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.ClientPortmapPort == 0 {
		cfg.ClientPortmapPort = 111
	}
	if cfg.GrantRetry <= 0 {
		cfg.GrantRetry = 10 * time.Second
	}
	if cfg.GrantAttempts <= 0 {
		cfg.GrantAttempts = 30
	}
	if cfg.CallbackTimeout <= 0 {
		cfg.CallbackTimeout = 5 * time.Second
	}
	if cfg.MachineName == "" {
		cfg.MachineName = "gonfsrdma"
	}
	s := &Server{cfg: cfg, log: cfg.Log, hosts: map[string]*Host{}, watched: map[string]bool{}, seen: map[string]time.Time{}, grants: map[uint64]*block{}, callbacks: make(chan struct{}, maxCallbacks)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.table = locks.New(locks.Config{MaxLocks: cfg.MaxLocks, Granted: s.granted})
	s.prog = oncrpc.Program{Prog: Prog, Name: "nlockmgr", Statuses: StatusNames(), Versions: []oncrpc.Version{
		{Vers: Vers1, Procs: s.procedures(Vers1)},
		{Vers: Vers3, Procs: s.procedures(Vers3)},
		{Vers: Vers4, Procs: s.procedures(Vers4)},
	}}
	s.wg.Add(1)
	go s.housekeeping()
	return s
}

// Program returns the static table for oncrpc.NewDispatcher.
func (s *Server) Program() *oncrpc.Program { return &s.prog }

// Table returns the lock table (tests, diagnostics).
func (s *Server) Table() *locks.Table { return s.table }

// Close stops callbacks and timers and lets go of the backing files'
// locks, as the end of the process would. It tells no one: the status
// monitor keeps its records, so the next start notifies the clients and
// they reclaim.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
	s.table.ReleaseAll()
}

// procedures is version vers' table. Every procedure that changes lock
// state goes through the duplicate request cache.
func (s *Server) procedures(vers uint32) []oncrpc.Procedure {
	n := ProcFreeAll + 1
	if vers == Vers1 {
		n = ProcGrantedRes + 1
	}
	t := make([]oncrpc.Procedure, n)
	t[ProcNull] = oncrpc.Procedure{Name: "NLM_NULL", Handler: null, Idempotent: true}
	t[ProcTest] = oncrpc.Procedure{Name: "NLM_TEST", Handler: s.test, Idempotent: true, StatusAfterCookie: true}
	t[ProcLock] = oncrpc.Procedure{Name: "NLM_LOCK", Handler: s.lockProc(true), StatusAfterCookie: true}
	t[ProcCancel] = oncrpc.Procedure{Name: "NLM_CANCEL", Handler: s.cancelProc, StatusAfterCookie: true}
	t[ProcUnlock] = oncrpc.Procedure{Name: "NLM_UNLOCK", Handler: s.unlockProc, StatusAfterCookie: true}
	t[ProcGranted] = oncrpc.Procedure{Name: "NLM_GRANTED", Handler: s.grantedProc, Idempotent: true, StatusAfterCookie: true}
	t[ProcTestMsg] = oncrpc.Procedure{Name: "NLM_TEST_MSG", Handler: s.msg(ProcTestRes, s.test)}
	t[ProcLockMsg] = oncrpc.Procedure{Name: "NLM_LOCK_MSG", Handler: s.msg(ProcLockRes, s.lockProc(true))}
	t[ProcCancelMsg] = oncrpc.Procedure{Name: "NLM_CANCEL_MSG", Handler: s.msg(ProcCancelRes, s.cancelProc)}
	t[ProcUnlockMsg] = oncrpc.Procedure{Name: "NLM_UNLOCK_MSG", Handler: s.msg(ProcUnlockRes, s.unlockProc)}
	t[ProcGrantedMsg] = oncrpc.Procedure{Name: "NLM_GRANTED_MSG", Handler: s.msg(ProcGrantedRes, s.grantedProc)}
	for _, p := range []uint32{ProcTestRes, ProcLockRes, ProcCancelRes, ProcUnlockRes} {
		t[p] = oncrpc.Procedure{Name: "NLM_RES", Handler: s.resProc(p), Idempotent: true}
	}
	t[ProcGrantedRes] = oncrpc.Procedure{Name: "NLM_GRANTED_RES", Handler: s.grantedRes}
	if vers == Vers1 {
		return t
	}
	t[ProcNSMNotify] = oncrpc.Procedure{Name: "NLM_SM_NOTIFY", Handler: s.smNotify}
	t[ProcShare] = oncrpc.Procedure{Name: "NLM_SHARE", Handler: s.share, StatusAfterCookie: true}
	t[ProcUnshare] = oncrpc.Procedure{Name: "NLM_UNSHARE", Handler: s.unshare, StatusAfterCookie: true}
	t[ProcNMLock] = oncrpc.Procedure{Name: "NLM_NM_LOCK", Handler: s.lockProc(false), StatusAfterCookie: true}
	t[ProcFreeAll] = oncrpc.Procedure{Name: "NLM_FREE_ALL", Handler: s.freeAll}
	return t
}

func null(context.Context, *oncrpc.Call, *oncrpc.Reply) error { return nil }

// hostKey is the host part of the lock owners of a call: the client's
// caller_name and address (as the Linux server keys its nlm_host), so one
// client cannot name another's locks.
func hostKey(call *oncrpc.Call, callerName string) string {
	return callerName + "@" + clientAddr(call).String()
}

func clientAddr(call *oncrpc.Call) netip.Addr { return call.Conn.Remote.Addr().Unmap() }

// lockRange turns offset and length into the table's inclusive range as
// the Linux server does (nlm4svc_retrieve_args): length 0 runs to
// MaxOffset; an offset, or a last byte, past MaxOffset is NLM4_FBIG.
func lockRange(off, length uint64) (int64, int64, Stat) {
	if off > math.MaxInt64 || (length != 0 && length-1 > math.MaxInt64-off) {
		return 0, 0, FBig
	}
	if length == 0 {
		return int64(off), locks.MaxOffset, Granted
	}
	return int64(off), int64(off + length - 1), Granted
}

// holderOf encodes a conflicting lock as nlm4_holder: length 0 for a lock
// to MaxOffset.
func holderOf(l locks.Lock) Holder {
	h := Holder{Exclusive: l.Exclusive, SVID: l.Owner.SVID, OH: []byte(l.Owner.OH), Offset: uint64(l.Start)}
	if l.End != locks.MaxOffset {
		h.Length = uint64(l.End-l.Start) + 1
	}
	return h
}

// checkFH applies the version 1 and 3 rule: their handles are NFSv2
// ones, exactly 32 bytes; anything else does not decode (GARBAGE_ARGS,
// as from the Linux server).
func checkFH(vers uint32, fh []byte) error {
	if vers != Vers4 && len(fh) != NFS2FHSize {
		return oncrpc.ErrGarbageArgs
	}
	return nil
}

func (s *Server) inGrace() bool { return s.cfg.Monitor != nil && s.cfg.Monitor.InGrace() }

// opener returns the table's Opener for f: the backend's lock holder
// when it has one.
func opener(f File) locks.Opener {
	lk, ok := f.FS.(vfs.Locker)
	if !ok {
		return nil
	}
	return func() (locks.Backing, error) {
		fl, err := lk.OpenLocks(f.Handle)
		if errors.Is(err, vfs.ErrNotSupported) {
			return nil, nil // directories and special files: the table alone
		}
		if err != nil {
			return nil, err
		}
		return backing{fl}, nil
	}
}

// backing adapts vfs.FileLocks to locks.Backing.
type backing struct{ fl vfs.FileLocks }

func ownerName(o locks.Owner) string {
	return o.Host + "\x00" + o.OH + "\x00" + itoa(o.SVID)
}

func itoa(v int32) string {
	var b [12]byte
	i := len(b)
	u := uint32(v)
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	return string(b[i:])
}

func (b backing) Lock(l locks.Lock) (bool, error) {
	return b.fl.Lock(ownerName(l.Owner), l.Exclusive, l.Start, l.End)
}

func (b backing) Unlock(o locks.Owner, start, end int64, last bool) error {
	if last {
		return b.fl.Forget(ownerName(o))
	}
	return b.fl.Unlock(ownerName(o), start, end)
}

func (b backing) Test(l locks.Lock) (locks.Lock, bool, error) {
	h, found, err := b.fl.Test(ownerName(l.Owner), l.Exclusive, l.Start, l.End)
	if err != nil || !found {
		return locks.Lock{}, false, err
	}
	svid := h.PID
	if svid < 0 {
		svid = 0
	}
	return locks.Lock{Owner: locks.Owner{SVID: svid}, Exclusive: h.Exclusive, Start: h.Start, End: h.End}, true, nil
}

func (b backing) Close() error { return b.fl.Close() }

// tableStat maps a table error to the status answered, logging it.
func (s *Server) tableStat(err error, op string, call *oncrpc.Call) Stat {
	switch {
	case errors.Is(err, vfs.ErrStale):
		return StaleFH
	case errors.Is(err, vfs.ErrLockUnsupported):
		s.log.Warn("the exported file system refuses locks", zap.String("op", op))
		return Failed
	}
	s.log.Error("lock operation failed", zap.String("op", op), zap.Stringer("remote", call.Conn.Remote), zap.Error(err))
	return Failed
}

// lockReq is a decoded lock request with its owner and range.
type lockReq struct {
	file  File
	lock  locks.Lock
	host  string
	state Stat
}

// prepare resolves l's handle and range for call.
func (s *Server) prepare(call *oncrpc.Call, l *Lock, exclusive bool) lockReq {
	start, end, st := lockRange(l.Offset, l.Length)
	if st != Granted {
		return lockReq{state: st}
	}
	f, st := s.cfg.Files.ResolveLock(call, l.FH, exclusive)
	if st != Granted {
		return lockReq{state: st}
	}
	host := hostKey(call, l.CallerName)
	return lockReq{file: f, host: host, lock: locks.Lock{
		Owner:     locks.Owner{Host: host, SVID: l.SVID, OH: string(l.OH)},
		Exclusive: exclusive, Start: start, End: end,
	}}
}

func (s *Server) test(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var a TestArgs
	if err := decodeLockArgs(call, &a, &a.Lock); err != nil {
		return err
	}
	res := TestRes{Cookie: a.Cookie}
	res.Stat = s.doTest(call, &a, &res.Holder)
	res.Stat = res.Stat.ForVersion(call.Vers)
	reply.Head = res.Append(reply.Head, call.Vers)
	return nil
}

func (s *Server) doTest(call *oncrpc.Call, a *TestArgs, h *Holder) Stat {
	if s.inGrace() {
		return DeniedGracePeriod
	}
	rq := s.prepare(call, &a.Lock, a.Exclusive)
	if rq.state != Granted {
		return rq.state
	}
	c, found, err := s.table.Test(rq.file.Key, rq.lock, opener(rq.file))
	if err != nil {
		return s.tableStat(err, "TEST", call)
	}
	if !found {
		return Granted
	}
	*h = holderOf(c)
	return Denied
}

// lockProc is LOCK (monitor: the host is recorded with the status
// monitor first) or NM_LOCK (not monitored).
func (s *Server) lockProc(monitor bool) oncrpc.Handler {
	return func(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
		var a LockArgs
		if err := decodeLockArgs(call, &a, &a.Lock); err != nil {
			return err
		}
		res := Res{Cookie: a.Cookie, Stat: s.doLock(call, &a, monitor).ForVersion(call.Vers)}
		reply.Head = res.Append(reply.Head)
		return nil
	}
}

func (s *Server) doLock(call *oncrpc.Call, a *LockArgs, monitor bool) Stat {
	// As the Linux server: during grace only reclaims, after it none.
	if s.inGrace() != a.Reclaim {
		return DeniedGracePeriod
	}
	rq := s.prepare(call, &a.Lock, a.Exclusive)
	if rq.state != Granted {
		return rq.state
	}
	if a.Exclusive && rq.file.ReadOnly {
		return ROFS
	}
	if st := s.noteHost(call, rq.host, a.Lock.CallerName, monitor); st != Granted {
		return st
	}
	var b *block
	if a.Block {
		b = &block{
			id: s.nextID.Add(1), file: rq.file.Key, lock: rq.lock, vers: call.Vers,
			transport: call.Conn.Transport, remote: clientAddr(call), local: call.Conn.Local.Addr().Unmap(),
			args: TestArgs{Exclusive: a.Exclusive, Lock: Lock{
				CallerName: a.Lock.CallerName, FH: clone(a.Lock.FH), OH: clone(a.Lock.OH),
				SVID: a.Lock.SVID, Offset: a.Lock.Offset, Length: a.Lock.Length,
			}},
		}
	}
	st, _, err := s.table.Lock(rq.file.Key, rq.lock, a.Block, b, opener(rq.file))
	if err != nil {
		return s.tableStat(err, "LOCK", call)
	}
	switch st {
	case locks.Granted:
		// A re-polled blocked lock that was granted meanwhile: the
		// client knows now, stop sending GRANTED.
		s.forgetGrants(rq.file.Key, rq.lock)
		return Granted
	case locks.Blocked:
		return Blocked
	case locks.NoLocks:
		return DeniedNoLocks
	case locks.Deadlock:
		return Deadlock
	}
	return Denied
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// noteHost remembers the caller and, for monitored requests, has the
// status monitor record it before anything is granted.
func (s *Server) noteHost(call *oncrpc.Call, key, name string, monitor bool) Stat {
	s.mu.Lock()
	h, ok := s.hosts[key]
	if !ok && len(s.hosts) >= maxHosts {
		s.mu.Unlock()
		s.log.Warn("too many client hosts hold locks; refusing a new one", zap.String("host", key), zap.Int("max", maxHosts))
		return DeniedNoLocks
	}
	if !ok {
		h = &Host{Key: key, Name: name, Addr: clientAddr(call), Local: call.Conn.Local.Addr().Unmap()}
		s.hosts[key] = h
	}
	s.seen[key] = time.Now()
	need := monitor && s.cfg.Monitor != nil && !s.watched[key]
	hc := *h
	s.mu.Unlock()
	if !need {
		return Granted
	}
	if err := s.cfg.Monitor.Monitor(hc); err != nil {
		s.log.Error("cannot record the client with the status monitor; refusing its lock", zap.String("host", key), zap.Error(err))
		return DeniedNoLocks
	}
	s.mu.Lock()
	s.watched[key] = true
	s.mu.Unlock()
	return Granted
}

// decodeLockArgs decodes the arguments of call into a, the arguments of
// TEST, LOCK, CANCEL or UNLOCK (or their _MSG forms), whose lock is lock,
// and checks lock's file handle: GARBAGE_ARGS when they do not decode,
// checkFH's error for a handle of the wrong form.
func decodeLockArgs(call *oncrpc.Call, a interface {
	Decode(r *xdr.Reader, vers uint32) error
}, lock *Lock) error {
	var r xdr.Reader
	if err := a.Decode(call.ArgsReader(&r), call.Vers); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	return checkFH(call.Vers, lock.FH)
}

func (s *Server) cancelProc(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var a CancelArgs
	if err := decodeLockArgs(call, &a, &a.Lock); err != nil {
		return err
	}
	res := Res{Cookie: a.Cookie, Stat: s.doCancel(call, &a).ForVersion(call.Vers)}
	reply.Head = res.Append(reply.Head)
	return nil
}

// doCancel removes a queued request. Cancelling nothing is GRANTED, as
// from the Linux server: the request may have been granted meanwhile, and
// then the GRANTED callback the client refuses releases it.
func (s *Server) doCancel(call *oncrpc.Call, a *CancelArgs) Stat {
	if s.inGrace() {
		return DeniedGracePeriod
	}
	rq := s.prepare(call, &a.Lock, a.Exclusive)
	if rq.state != Granted {
		return rq.state
	}
	s.table.Cancel(rq.file.Key, rq.lock)
	return Granted
}

func (s *Server) unlockProc(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var a UnlockArgs
	if err := decodeLockArgs(call, &a, &a.Lock); err != nil {
		return err
	}
	res := Res{Cookie: a.Cookie, Stat: s.doUnlock(call, &a).ForVersion(call.Vers)}
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doUnlock(call *oncrpc.Call, a *UnlockArgs) Stat {
	if s.inGrace() {
		return DeniedGracePeriod
	}
	rq := s.prepare(call, &a.Lock, false)
	if rq.state != Granted {
		return rq.state
	}
	if err := s.table.Unlock(rq.file.Key, rq.lock.Owner, rq.lock.Start, rq.lock.End); err != nil {
		return s.tableStat(err, "UNLOCK", call)
	}
	return Granted
}

// grantedProc answers GRANTED sent to this server: it has no client
// side waiting for one, so DENIED, as the Linux lock manager answers a
// grant it has no blocked request for.
func (s *Server) grantedProc(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var a TestArgs
	var r xdr.Reader
	if err := a.Decode(call.ArgsReader(&r), call.Vers); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	res := Res{Cookie: a.Cookie, Stat: Denied}
	reply.Head = res.Append(reply.Head)
	return nil
}

// resProc accepts TEST_RES, LOCK_RES, CANCEL_RES and UNLOCK_RES: this
// server sends no _MSG requests, so they answer nothing; they must
// decode.
func (s *Server) resProc(proc uint32) oncrpc.Handler {
	return func(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
		var r xdr.Reader
		call.ArgsReader(&r)
		var err error
		if proc == ProcTestRes {
			var res TestRes
			err = res.Decode(&r, call.Vers)
		} else {
			var res Res
			err = res.Decode(&r)
		}
		if err != nil {
			return oncrpc.ErrGarbageArgs
		}
		return nil
	}
}

func (s *Server) share(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var a ShareArgs
	var r xdr.Reader
	if err := a.Decode(call.ArgsReader(&r)); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	if err := checkFH(call.Vers, a.Share.FH); err != nil {
		return err
	}
	res := ShareRes{Cookie: a.Cookie, Stat: s.doShare(call, &a).ForVersion(call.Vers)}
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doShare(call *oncrpc.Call, a *ShareArgs) Stat {
	if s.inGrace() && !a.Reclaim {
		return DeniedGracePeriod
	}
	f, st := s.cfg.Files.ResolveLock(call, a.Share.FH, false)
	if st != Granted {
		return st
	}
	if a.Share.Access&AccessWrite != 0 && f.ReadOnly {
		return ROFS
	}
	host := hostKey(call, a.Share.CallerName)
	if st := s.noteHost(call, host, a.Share.CallerName, true); st != Granted {
		return st
	}
	ts, err := s.table.Share(f.Key, locks.Share{Host: host, OH: string(a.Share.OH), Mode: a.Share.Mode, Access: a.Share.Access}, nil)
	if err != nil {
		return s.tableStat(err, "SHARE", call)
	}
	switch ts {
	case locks.Granted:
		return Granted
	case locks.NoLocks:
		return DeniedNoLocks
	}
	return Denied
}

func (s *Server) unshare(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var a ShareArgs
	var r xdr.Reader
	if err := a.Decode(call.ArgsReader(&r)); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	if err := checkFH(call.Vers, a.Share.FH); err != nil {
		return err
	}
	res := ShareRes{Cookie: a.Cookie, Stat: Granted}
	if s.inGrace() {
		res.Stat = DeniedGracePeriod
	} else if f, st := s.cfg.Files.ResolveLock(call, a.Share.FH, false); st != Granted {
		res.Stat = st
	} else {
		s.table.Unshare(f.Key, hostKey(call, a.Share.CallerName), string(a.Share.OH))
	}
	res.Stat = res.Stat.ForVersion(call.Vers)
	reply.Head = res.Append(reply.Head)
	return nil
}

// freeAll is FREE_ALL: the caller (by name and address) lost every lock
// (it rebooted, says a status monitor that speaks for it).
func (s *Server) freeAll(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
	var n Notify
	var r xdr.Reader
	if err := n.Decode(call.ArgsReader(&r)); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	key := hostKey(call, n.Name)
	freed := s.table.ReleaseHost(key)
	s.dropHosts(func(h *Host) bool { return h.Key == key })
	s.log.Info("FREE_ALL", zap.String("host", key), zap.Int("released", freed))
	return nil
}

// smNotify is procedure 16, which only the local status monitor may
// call (loopback, privileged port), as on Linux.
func (s *Server) smNotify(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
	if !clientAddr(call).IsLoopback() || call.Conn.Remote.Port() >= 1024 {
		s.log.Info("NLM SM_NOTIFY from a non-local or unprivileged caller refused", zap.Stringer("remote", call.Conn.Remote))
		return oncrpc.ErrSystem
	}
	var n Reboot
	var r xdr.Reader
	if err := n.Decode(call.ArgsReader(&r)); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	s.HostRebooted(n.MonName, netip.Addr{})
	return nil
}

// HostRebooted releases everything of the hosts that a reboot
// notification names: those whose caller_name is name (case-insensitive)
// and, when addr is valid (the name is an address), those at addr, as
// rpc.statd matches SM_NOTIFY's mon_name. It returns the entries freed.
func (s *Server) HostRebooted(name string, addr netip.Addr) int {
	match := func(h *Host) bool {
		return (name != "" && strings.EqualFold(h.Name, name)) || (addr.IsValid() && h.Addr == addr.Unmap())
	}
	s.mu.Lock()
	keys := map[string]bool{}
	for k, h := range s.hosts {
		if match(h) {
			keys[k] = true
		}
	}
	s.mu.Unlock()
	freed := s.table.ReleaseHosts(func(h string) bool { return keys[h] })
	s.dropHosts(match)
	s.log.Info("client rebooted: its locks are released", zap.String("name", name), zap.Stringer("addr", addr), zap.Int("hosts", len(keys)), zap.Int("released", freed))
	return freed
}

// ReleaseAll drops every lock (a simulated crash of this server).
func (s *Server) ReleaseAll() int {
	n := s.table.ReleaseAll()
	s.dropHosts(func(*Host) bool { return true })
	return n
}

// ReleaseExport drops every lock on files of export fsid (the export
// was removed).
func (s *Server) ReleaseExport(fsid uint32) int {
	p := KeyPrefix(fsid)
	n := s.table.ReleaseFiles(func(k string) bool { return strings.HasPrefix(k, p) })
	if n > 0 {
		s.log.Info("export removed: its locks are released", zap.Uint32("fsid", fsid), zap.Int("released", n))
	}
	return n
}

// dropHosts forgets the hosts match selects and their pending grants.
func (s *Server) dropHosts(match func(*Host) bool) {
	s.mu.Lock()
	var gone []string
	for k, h := range s.hosts {
		if match(h) {
			delete(s.hosts, k)
			delete(s.seen, k)
			if s.watched[k] {
				gone = append(gone, k)
				delete(s.watched, k)
			}
		}
	}
	for id, b := range s.grants {
		if _, ok := s.hosts[b.lock.Owner.Host]; !ok {
			delete(s.grants, id)
		}
	}
	s.mu.Unlock()
	if s.cfg.Monitor != nil {
		for _, k := range gone {
			s.cfg.Monitor.Unmonitor(k)
		}
	}
}

// housekeeping retries waiters blocked by locks outside the table and
// forgets idle hosts.
func (s *Server) housekeeping() {
	defer s.wg.Done()
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	sweep := time.NewTicker(30 * time.Second)
	defer sweep.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-poll.C:
			s.table.Poll()
		case <-sweep.C:
			// A host is forgotten (and unmonitored) when it has held
			// nothing since its last request over a minute ago.
			s.mu.Lock()
			var keys []string
			for k := range s.hosts {
				if time.Since(s.seen[k]) > time.Minute {
					keys = append(keys, k)
				}
			}
			s.mu.Unlock()
			busy := s.table.BusyHosts()
			idle := map[string]bool{}
			for _, k := range keys {
				if !busy[k] {
					idle[k] = true
				}
			}
			s.dropHosts(func(h *Host) bool { return idle[h.Key] })
		}
	}
}
