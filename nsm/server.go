package nsm

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nlm"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Config configures Start.
type Config struct {
	// StateDir holds StateFile. Required.
	StateDir string
	// Grace is the grace period after a start with hosts to reclaim, and
	// after SIMU_CRASH.
	Grace time.Duration
	Log   *zap.Logger
	// OnReboot is told of each SM_NOTIFY: the host named name rebooted
	// and lost its locks; addr is name as an address when it is one.
	OnReboot func(name string, addr netip.Addr)
	// OnCrash is told of SIMU_CRASH: the lock manager drops its locks.
	OnCrash func()
	// ClientPortmapPort is the port of the clients' rpcbind (0: 111),
	// where SM_NOTIFY finds their status monitor.
	ClientPortmapPort int
	// LocalPortmap returns the rpcbind address where programs that
	// called MON are found for their callback (nil: 127.0.0.1:111).
	LocalPortmap func() string
	// NotifyFor bounds how long SM_NOTIFY is retried for one host (0:
	// 15 minutes, as sm-notify(8)); NotifyInterval is the first retry
	// interval (0: 1 s), doubling up to a minute.
	NotifyFor      time.Duration
	NotifyInterval time.Duration
	// Name is this server's mon_name in SM_NOTIFY when the address the
	// host reached is unknown (0: the host name).
	Name string
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// maxMonRecords bounds MON registrations (local callers only).
const maxMonRecords = 1024

// Server is the status monitor: program 100024 version 1, the state
// number and the monitored hosts. It implements nlm.Monitor.
type Server struct {
	cfg  Config
	log  *zap.Logger
	prog oncrpc.Program

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	state    int32
	hosts    map[string]Record
	graceEnd time.Time
	// pending: hosts still to be notified of the current state (kept in
	// the file until they are); fresh: monitored again during this run.
	pending map[string]bool
	fresh   map[string]bool
}

// Start reads the state directory, raises the state number by two (odd:
// up), writes it back, starts the grace period when hosts held locks
// before, and notifies those hosts in the background.
func Start(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.ClientPortmapPort == 0 {
		cfg.ClientPortmapPort = rpcbind.Port
	}
	if cfg.LocalPortmap == nil {
		cfg.LocalPortmap = func() string { return "127.0.0.1:111" }
	}
	if cfg.NotifyFor <= 0 {
		cfg.NotifyFor = 15 * time.Minute
	}
	if cfg.NotifyInterval <= 0 {
		cfg.NotifyInterval = time.Second
	}
	if cfg.Name == "" {
		cfg.Name, _ = os.Hostname()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p, err := load(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	if err := removeStaleTemps(cfg.StateDir); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Log, hosts: map[string]Record{}, pending: map[string]bool{}, fresh: map[string]bool{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.state = nextState(p.State)
	for _, r := range p.Hosts {
		s.hosts[r.Key] = r
		if heldLocks(r) {
			s.pending[r.Key] = true
		}
	}
	if err := s.saveLocked(); err != nil {
		return nil, err
	}
	if len(s.pending) > 0 {
		s.graceEnd = cfg.Now().Add(cfg.Grace)
		s.log.Info("status monitor: clients held locks before this start; grace period for reclaims",
			zap.Int32("state", s.state), zap.Int("hosts", len(s.pending)), zap.Duration("grace", cfg.Grace))
	} else {
		s.log.Info("status monitor: no client held locks before this start; no grace period", zap.Int32("state", s.state))
	}
	s.prog = oncrpc.Program{Prog: Prog, Name: "status", Statuses: map[uint32]string{uint32(StatSucc): "STAT_SUCC", uint32(StatFail): "STAT_FAIL"}, Versions: []oncrpc.Version{{Vers: Vers1, Procs: s.procedures()}}}
	s.notifyPending()
	return s, nil
}

// heldLocks reports a host recorded for its locks (not a local MON
// caller): one to notify after a restart, and the reason for a grace period.
func heldLocks(r Record) bool { return r.MyID == nil }

// NeedsGrace reports whether Start on stateDir will begin a grace period
// (hosts held locks before it), changing nothing: for a caller that must
// prepare before the state behind those locks is released (the CephFS
// backend tells the other heads first).
func NeedsGrace(stateDir string) (bool, error) {
	p, err := load(stateDir)
	if err != nil {
		return false, err
	}
	for _, r := range p.Hosts {
		if heldLocks(r) {
			return true, nil
		}
	}
	return false, nil
}

// nextState is the state after a start: up by two, odd; 1 for the first
// start (no state yet) and after the number wraps.
func nextState(prev int32) int32 {
	if prev <= 0 {
		return 1
	}
	n := prev + 2
	if n%2 == 0 {
		n++
	}
	if n <= 0 {
		n = 1
	}
	return n
}

// Program returns the static table for oncrpc.NewDispatcher.
func (s *Server) Program() *oncrpc.Program { return &s.prog }

// State returns the current state number.
func (s *Server) State() int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// InGrace implements nlm.Monitor.
func (s *Server) InGrace() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Now().Before(s.graceEnd)
}

// GraceEnd returns when the grace period ends (the past when it is off).
func (s *Server) GraceEnd() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.graceEnd
}

// Hosts returns the recorded hosts.
func (s *Server) Hosts() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, 0, len(s.hosts))
	for _, r := range s.hosts {
		out = append(out, r)
	}
	return out
}

// Close stops notifications in progress. The file keeps the hosts not
// yet notified, for the next start.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

func (s *Server) saveLocked() error {
	p := persisted{State: s.state, Hosts: make([]Record, 0, len(s.hosts))}
	for _, r := range s.hosts {
		p.Hosts = append(p.Hosts, r)
	}
	return save(s.cfg.StateDir, p)
}

// Monitor implements nlm.Monitor: h is in the file before it returns.
func (s *Server) Monitor(h nlm.Host) error {
	r := Record{Key: h.Key, Name: h.Name}
	if h.Addr.IsValid() {
		r.Addr = h.Addr.String()
	}
	if h.Local.IsValid() {
		r.Local = h.Local.String()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fresh[h.Key] = true
	if old, ok := s.hosts[h.Key]; ok && old.Addr == r.Addr && old.Local == r.Local && old.Name == r.Name {
		return nil
	}
	prev, had := s.hosts[h.Key]
	s.hosts[h.Key] = r
	if err := s.saveLocked(); err != nil {
		if had {
			s.hosts[h.Key] = prev
		} else {
			delete(s.hosts, h.Key)
		}
		return err
	}
	return nil
}

// Unmonitor implements nlm.Monitor. A host still to be told of this
// server's restart stays recorded until it is.
func (s *Server) Unmonitor(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.fresh, key)
	if _, ok := s.hosts[key]; !ok || s.pending[key] {
		return
	}
	delete(s.hosts, key)
	if err := s.saveLocked(); err != nil {
		s.log.Error("status monitor: cannot write the host list", zap.Error(err))
	}
}

func (s *Server) procedures() []oncrpc.Procedure {
	return []oncrpc.Procedure{
		ProcNull:      {Name: "SM_NULL", Handler: func(context.Context, *oncrpc.Call, *oncrpc.Reply) error { return nil }, Idempotent: true},
		ProcStat:      {Name: "SM_STAT", Handler: s.stat, Idempotent: true, Status: true}, // sm_stat_res begins with res
		ProcMon:       {Name: "SM_MON", Handler: s.mon, Status: true},
		ProcUnmon:     {Name: "SM_UNMON", Handler: s.unmon},
		ProcUnmonAll:  {Name: "SM_UNMON_ALL", Handler: s.unmonAll},
		ProcSimuCrash: {Name: "SM_SIMU_CRASH", Handler: s.simuCrash},
		ProcNotify:    {Name: "SM_NOTIFY", Handler: s.notify},
	}
}

// local reports whether call comes from this host, as rpc.statd requires
// for MON, UNMON, UNMON_ALL and SIMU_CRASH.
func local(call *oncrpc.Call) bool { return call.Conn.Remote.Addr().Unmap().IsLoopback() }

// stat is SM_STAT: stat_succ with the state for a non-empty name (this
// monitor does no name lookups), stat_fail for an empty one.
func (s *Server) stat(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var n Name
	var r xdr.Reader
	if err := n.Decode(call.ArgsReader(&r)); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	res := StatRes{Res: StatSucc, State: s.State()}
	if n.MonName == "" {
		res.Res = StatFail
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

func monKey(monName string, id *MyID) string {
	return "mon:" + monName + "\x00" + id.MyName + "\x00" + strconv.FormatUint(uint64(id.MyProg), 10) + "." +
		strconv.FormatUint(uint64(id.MyVers), 10) + "." + strconv.FormatUint(uint64(id.MyProc), 10)
}

// mon is SM_MON from a local program: record the host and call the
// program back when it reboots.
func (s *Server) mon(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var m Mon
	var r xdr.Reader
	if err := m.Decode(call.ArgsReader(&r)); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	res := StatRes{Res: StatFail, State: s.State()}
	if !local(call) || m.MonID.MonName == "" {
		s.log.Info("SM_MON refused", zap.Stringer("remote", call.Conn.Remote), zap.String("mon_name", m.MonID.MonName))
		reply.Head = res.Append(reply.Head)
		return nil
	}
	id := m.MonID.MyID
	rec := Record{Key: monKey(m.MonID.MonName, &id), Name: m.MonID.MonName, MyID: &id, Priv: append([]byte(nil), m.Priv[:]...)}
	if ip, err := netip.ParseAddr(m.MonID.MonName); err == nil {
		rec.Addr = ip.Unmap().String()
	}
	s.mu.Lock()
	n := 0
	for _, h := range s.hosts {
		if h.MyID != nil {
			n++
		}
	}
	if _, ok := s.hosts[rec.Key]; ok || n < maxMonRecords {
		s.hosts[rec.Key] = rec
		if err := s.saveLocked(); err != nil {
			delete(s.hosts, rec.Key)
			s.log.Error("status monitor: cannot write the host list", zap.Error(err))
		} else {
			res.Res = StatSucc
		}
	}
	s.mu.Unlock()
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) unmon(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var m MonID
	var r xdr.Reader
	if err := m.Decode(call.ArgsReader(&r)); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	if local(call) {
		s.removeWhere(func(h Record) bool { return h.Key == monKey(m.MonName, &m.MyID) })
	}
	reply.Head = xdr.AppendInt32(reply.Head, s.State())
	return nil
}

func (s *Server) unmonAll(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var id MyID
	var r xdr.Reader
	if err := id.Decode(call.ArgsReader(&r)); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	if local(call) {
		s.removeWhere(func(h Record) bool { return h.MyID != nil && *h.MyID == id })
	}
	reply.Head = xdr.AppendInt32(reply.Head, s.State())
	return nil
}

func (s *Server) removeWhere(match func(Record) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for k, h := range s.hosts {
		if match(h) {
			delete(s.hosts, k)
			changed = true
		}
	}
	if changed {
		if err := s.saveLocked(); err != nil {
			s.log.Error("status monitor: cannot write the host list", zap.Error(err))
		}
	}
}

// simuCrash is SM_SIMU_CRASH from a local program: behave as after a
// restart (new state, lock manager's locks dropped, grace period, every
// recorded host notified).
func (s *Server) simuCrash(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
	if !local(call) {
		s.log.Info("SM_SIMU_CRASH from a remote caller ignored", zap.Stringer("remote", call.Conn.Remote))
		return nil
	}
	s.mu.Lock()
	s.state = nextState(s.state)
	for k, h := range s.hosts {
		if h.MyID == nil {
			s.pending[k] = true
		}
	}
	if err := s.saveLocked(); err != nil {
		s.log.Error("status monitor: cannot write the state", zap.Error(err))
	}
	s.graceEnd = s.cfg.Now().Add(s.cfg.Grace)
	st := s.state
	s.mu.Unlock()
	s.log.Info("SM_SIMU_CRASH: locks dropped, grace period, clients notified", zap.Int32("state", st), zap.Duration("grace", s.cfg.Grace))
	if s.cfg.OnCrash != nil {
		s.cfg.OnCrash()
	}
	s.notifyPending()
	return nil
}

// notify is SM_NOTIFY from a rebooted host's status monitor.
func (s *Server) notify(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
	var c StatChange
	var r xdr.Reader
	if err := c.Decode(call.ArgsReader(&r)); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	from := call.Conn.Remote.Addr().Unmap()
	s.log.Info("SM_NOTIFY: a client rebooted", zap.String("mon_name", c.MonName), zap.Int32("state", c.State), zap.Stringer("from", from))
	if s.cfg.OnReboot != nil {
		// As rpc.statd, by mon_name (not by the sender: UDP, any host
		// can send it). A name that is an address names its host.
		ip, _ := netip.ParseAddr(c.MonName)
		s.cfg.OnReboot(c.MonName, ip.Unmap())
	}
	s.mu.Lock()
	var calls []Record
	for _, h := range s.hosts {
		if h.MyID != nil && h.Name == c.MonName {
			calls = append(calls, h)
		}
	}
	s.mu.Unlock()
	for _, h := range calls {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.callMonitor(h, c.State)
		}()
	}
	return nil
}

// callMonitor tells the local program that MONitored h of the new state.
func (s *Server) callMonitor(h Record, state int32) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	st := Status{MonName: h.Name, State: state}
	copy(st.Priv[:], h.Priv)
	err := s.call(ctx, s.cfg.LocalPortmap(), "", h.MyID.MyProg, h.MyID.MyVers, h.MyID.MyProc, st.Append(nil))
	if err != nil {
		s.log.Info("status monitor: MON callback failed", zap.String("mon_name", h.Name), zap.Error(err))
	}
}

// call finds prog/vers over UDP through the rpcbind at pmAddr and calls
// proc with args from local (if set).
func (s *Server) call(ctx context.Context, pmAddr, local string, prog, vers, proc uint32, args []byte) error {
	pm, err := oncrpc.Dial(ctx, "udp", pmAddr)
	if err != nil {
		return err
	}
	port, err := rpcbind.GetPort(ctx, pm, prog, vers, rpcbind.ProtoUDP)
	pm.Close()
	if err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(pmAddr)
	from, _ := netip.ParseAddr(local)
	conn, err := nlm.DialCallback(ctx, "udp", from, net.JoinHostPort(host, strconv.Itoa(int(port))), 5*time.Second)
	if err != nil {
		return err
	}
	c := oncrpc.NewClient(conn)
	defer c.Close()
	_, err = c.Call(ctx, &oncrpc.ClientCall{Prog: prog, Vers: vers, Proc: proc, Args: args})
	return err
}

// notifyPending sends SM_NOTIFY to every pending host in the background.
func (s *Server) notifyPending() {
	s.mu.Lock()
	var hosts []Record
	for k := range s.pending {
		hosts = append(hosts, s.hosts[k])
	}
	st := s.state
	s.mu.Unlock()
	for _, h := range hosts {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.notifyHost(h, st)
		}()
	}
}

// notifyHost sends SM_NOTIFY to h until it answers or NotifyFor passes.
func (s *Server) notifyHost(h Record, state int32) {
	monName := h.Local
	if monName == "" {
		monName = s.cfg.Name
	}
	args := (&StatChange{MonName: monName, State: state}).Append(nil)
	deadline := time.Now().Add(s.cfg.NotifyFor)
	wait := s.cfg.NotifyInterval
	for {
		addr := h.Addr
		if addr == "" {
			if ips, err := net.DefaultResolver.LookupHost(s.ctx, h.Name); err == nil && len(ips) > 0 {
				addr = ips[0]
			}
		}
		var err error
		if addr == "" {
			err = errNoAddress
		} else {
			ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
			err = s.call(ctx, net.JoinHostPort(addr, strconv.Itoa(s.cfg.ClientPortmapPort)), h.Local, Prog, Vers1, ProcNotify, args)
			cancel()
		}
		if err == nil {
			s.notified(h.Key, state)
			s.log.Info("SM_NOTIFY delivered", zap.String("host", h.Name), zap.String("addr", addr), zap.Int32("state", state))
			return
		}
		if time.Now().Add(wait).After(deadline) || s.ctx.Err() != nil {
			s.log.Warn("SM_NOTIFY not delivered; the host stays recorded for the next start", zap.String("host", h.Name), zap.String("addr", addr), zap.Error(err))
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}

type notifyError string

func (e notifyError) Error() string { return string(e) }

const errNoAddress = notifyError("nsm: no address for the host")

// notified removes h from the pending set and, unless it was monitored
// again since, from the file.
func (s *Server) notified(key string, state int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != state {
		return // a SIMU_CRASH since: notified again
	}
	delete(s.pending, key)
	if s.fresh[key] {
		return
	}
	delete(s.hosts, key)
	if err := s.saveLocked(); err != nil {
		s.log.Error("status monitor: cannot write the host list", zap.Error(err))
	}
}
