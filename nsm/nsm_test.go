package nsm

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nlm"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// peerStatd is a client host's status monitor on loopback: an rpcbind
// naming an NSM that records the SM_NOTIFYs it gets.
type peerStatd struct {
	pmPort int
	mu     sync.Mutex
	got    []StatChange
	from   []netip.Addr
}

func startPeer(t *testing.T) *peerStatd {
	t.Helper()
	p := &peerStatd{}
	prog := &oncrpc.Program{Prog: Prog, Name: "status", Versions: []oncrpc.Version{{Vers: Vers1, Procs: []oncrpc.Procedure{
		ProcNull: {Name: "NULL", Handler: func(context.Context, *oncrpc.Call, *oncrpc.Reply) error { return nil }},
		ProcNotify: {Name: "NOTIFY", Handler: func(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
			var c StatChange
			if err := c.Decode(xdr.NewReader(call.Args)); err != nil {
				return oncrpc.ErrGarbageArgs
			}
			p.mu.Lock()
			p.got = append(p.got, c)
			p.from = append(p.from, call.Conn.Remote.Addr())
			p.mu.Unlock()
			return nil
		}},
	}}}}
	srv := oncrpc.NewServer(zap.NewNop(), oncrpc.NewDispatcher(zap.NewNop(), nil, prog), oncrpc.ServerConfig{})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeUDP(pc)
	port := uint16(pc.LocalAddr().(*net.UDPAddr).Port)
	pm, err := rpcbind.Start(context.Background(), zap.NewNop(), rpcbind.Config{Addr: "127.0.0.1:0", Mappings: []rpcbind.Mapping{rpcbind.NewMapping(Prog, Vers1, "udp", port)}})
	if err != nil {
		t.Fatal(err)
	}
	p.pmPort = pm.Addr().(*net.TCPAddr).Port
	t.Cleanup(func() {
		pm.Close(context.Background())
		srv.Shutdown(context.Background())
	})
	return p
}

func (p *peerStatd) wait(t *testing.T, n int) []StatChange {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		if len(p.got) >= n {
			out := append([]StatChange(nil), p.got...)
			p.mu.Unlock()
			return out
		}
		p.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no SM_NOTIFY %d arrived", n)
	return nil
}

// TestRestartNotifiesAndGrace: the state goes up by two per start and
// stays odd, hosts recorded before a start are notified with the new
// state (mon_name: the address they reached) and leave the file, and
// the grace period runs only when there was someone to reclaim.
func TestRestartNotifiesAndGrace(t *testing.T) {
	dir := t.TempDir()
	peer := startPeer(t)
	cfg := Config{StateDir: dir, Grace: time.Hour, ClientPortmapPort: peer.pmPort, NotifyInterval: 10 * time.Millisecond, NotifyFor: 5 * time.Second}
	if need, err := NeedsGrace(dir); err != nil || need {
		t.Fatalf("NeedsGrace of an empty state directory = %v, %v; want false", need, err)
	}
	s1, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s1.State() != 1 || s1.InGrace() {
		t.Fatalf("first start: state %d, grace %v", s1.State(), s1.InGrace())
	}
	h := nlm.Host{Key: "client@127.0.0.1", Name: "client", Addr: netip.MustParseAddr("127.0.0.1"), Local: netip.MustParseAddr("127.0.0.1")}
	if err := s1.Monitor(h); err != nil {
		t.Fatal(err)
	}
	s1.Close() // a crash: the host stays recorded

	if need, err := NeedsGrace(dir); err != nil || !need {
		t.Fatalf("NeedsGrace before the second start = %v, %v; want true", need, err)
	}
	s2, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.State() != 3 || !s2.InGrace() {
		t.Fatalf("second start: state %d, grace %v", s2.State(), s2.InGrace())
	}
	got := peer.wait(t, 1)
	if got[0].State != 3 || got[0].MonName != "127.0.0.1" {
		t.Fatalf("SM_NOTIFY %+v", got[0])
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(s2.Hosts()) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(s2.Hosts()) != 0 {
		t.Fatalf("notified host still recorded: %+v", s2.Hosts())
	}
	p, err := load(dir)
	if err != nil || p.State != 3 || len(p.Hosts) != 0 {
		t.Fatalf("file: %+v %v", p, err)
	}
	if need, err := NeedsGrace(dir); err != nil || need {
		t.Fatalf("NeedsGrace after every host was notified = %v, %v; want false", need, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, StateFile+".tmp*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

func TestStateNumbers(t *testing.T) {
	for prev, want := range map[int32]int32{0: 1, -5: 1, 1: 3, 2: 5, 7: 9, 1<<31 - 2: 1} {
		if got := nextState(prev); got != want {
			t.Errorf("nextState(%d) = %d, want %d", prev, got, want)
		}
	}
}

// TestCrashMidWrite: a save cut short by a crash (its temporary file
// half written, never renamed) loses nothing: the next start reads the
// previous file whole (the lock holder is still recorded, so grace runs
// and the state goes up by two from the last one written) and removes the
// leftover.
func TestCrashMidWrite(t *testing.T) {
	dir := t.TempDir()
	peer := startPeer(t)
	cfg := Config{StateDir: dir, Grace: time.Hour, ClientPortmapPort: peer.pmPort, NotifyInterval: 10 * time.Millisecond, NotifyFor: 5 * time.Second}
	s1, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := nlm.Host{Key: "client@127.0.0.1", Name: "client", Addr: netip.MustParseAddr("127.0.0.1"), Local: netip.MustParseAddr("127.0.0.1")}
	if err := s1.Monitor(h); err != nil {
		t.Fatal(err)
	}
	s1.Close()
	whole, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	// The crashed save: what a write of the next state had reached.
	crashed := filepath.Join(dir, StateFile+".tmp123456")
	if err := os.WriteFile(crashed, whole[:len(whole)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := Start(cfg)
	if err != nil {
		t.Fatalf("start after a crashed write: %v", err)
	}
	defer s2.Close()
	if s2.State() != 3 || !s2.InGrace() {
		t.Fatalf("after a crashed write: state %d (want 3), grace %v (want true: the holder is still recorded)", s2.State(), s2.InGrace())
	}
	if got := peer.wait(t, 1); got[0].State != 3 {
		t.Fatalf("SM_NOTIFY %+v, want state 3 to the recorded holder", got[0])
	}
	// Only the planted file: s2's own saves (after the SM_NOTIFY) may
	// have a temporary file of their own in flight.
	if _, err := os.Stat(crashed); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the crashed write's temporary file is still there (stat: %v)", err)
	}
}

func TestCorruptStateFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, StateFile), []byte("{not json"), 0o600)
	if _, err := Start(Config{StateDir: dir}); err == nil {
		t.Fatal("a corrupt state file was accepted")
	}
}

func dispatch(t testing.TB, s *Server, remote string, proc uint32, args []byte) []byte {
	t.Helper()
	d := oncrpc.NewDispatcher(zap.NewNop(), nil, s.Program())
	h := oncrpc.CallHeader{XID: 1, Prog: Prog, Vers: Vers1, Proc: proc, Cred: oncrpc.NewAuthSys("c", 0, 0)}
	msg := append(oncrpc.AppendCallHeader(nil, &h), args...)
	ex := &oncrpc.BufferExchange{From: oncrpc.Peer{Transport: oncrpc.UDP, Local: netip.MustParseAddrPort("127.0.0.1:4046"), Remote: netip.MustParseAddrPort(remote)}, Msg: msg}
	var call oncrpc.Call
	reply := oncrpc.NewReply(nil)
	if !d.Dispatch(context.Background(), ex, &call, &reply) {
		t.Fatal("no reply")
	}
	return reply.AppendFlat(nil)
}

func TestProcedures(t *testing.T) {
	var rebooted []string
	crashed := 0
	s, err := Start(Config{StateDir: t.TempDir(), Grace: time.Hour,
		OnReboot: func(name string, addr netip.Addr) { rebooted = append(rebooted, name+"/"+addr.String()) },
		OnCrash:  func() { crashed++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	statRes := func(b []byte) StatRes {
		res, err := oncrpc.ParseReply(b)
		if err != nil {
			t.Fatal(err)
		}
		var r StatRes
		if err := r.Decode(xdr.NewReader(res)); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := statRes(dispatch(t, s, "10.0.0.9:700", ProcStat, (&Name{MonName: "x"}).Append(nil))); r.Res != StatSucc || r.State != 1 {
		t.Fatalf("STAT %+v", r)
	}
	mon := Mon{MonID: MonID{MonName: "10.0.0.9", MyID: MyID{MyName: "localhost", MyProg: 100021, MyVers: 4, MyProc: 16}}}
	if r := statRes(dispatch(t, s, "10.0.0.9:700", ProcMon, mon.Append(nil))); r.Res != StatFail {
		t.Fatal("MON from a remote host accepted")
	}
	if r := statRes(dispatch(t, s, "127.0.0.1:700", ProcMon, mon.Append(nil))); r.Res != StatSucc || len(s.Hosts()) != 1 {
		t.Fatalf("MON %+v, %d hosts", r, len(s.Hosts()))
	}
	dispatch(t, s, "127.0.0.1:700", ProcUnmon, mon.MonID.Append(nil))
	if len(s.Hosts()) != 0 {
		t.Fatal("UNMON left the host")
	}
	dispatch(t, s, "127.0.0.1:700", ProcMon, mon.Append(nil))
	dispatch(t, s, "127.0.0.1:700", ProcUnmonAll, mon.MonID.MyID.Append(nil))
	if len(s.Hosts()) != 0 {
		t.Fatal("UNMON_ALL left the host")
	}
	dispatch(t, s, "10.0.0.9:700", ProcNotify, (&StatChange{MonName: "client", State: 7}).Append(nil))
	dispatch(t, s, "10.0.0.9:700", ProcNotify, (&StatChange{MonName: "10.0.0.7", State: 9}).Append(nil))
	if len(rebooted) != 2 || rebooted[0] != "client/invalid IP" || rebooted[1] != "10.0.0.7/10.0.0.7" {
		t.Fatalf("OnReboot calls %v", rebooted)
	}
	dispatch(t, s, "10.0.0.9:700", ProcSimuCrash, nil)
	if crashed != 0 || s.State() != 1 {
		t.Fatal("remote SIMU_CRASH obeyed")
	}
	dispatch(t, s, "127.0.0.1:700", ProcSimuCrash, nil)
	if crashed != 1 || s.State() != 3 || !s.InGrace() {
		t.Fatalf("SIMU_CRASH: crashed %d, state %d, grace %v", crashed, s.State(), s.InGrace())
	}
	if _, err := oncrpc.ParseReply(dispatch(t, s, "127.0.0.1:700", ProcMon, []byte{0, 0})); err == nil {
		t.Fatal("truncated MON decodes")
	}
}

// FuzzArgs: every NSM argument decoder on arbitrary input.
func FuzzArgs(f *testing.F) {
	f.Add((&Mon{MonID: MonID{MonName: "h", MyID: MyID{MyName: "l", MyProg: 1, MyVers: 2, MyProc: 3}}}).Append(nil))
	f.Add((&StatChange{MonName: "h", State: 3}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var n Name
		if n.Decode(xdr.NewReader(b)) == nil && len(n.MonName) > SMMaxStrLen {
			t.Fatal("long name")
		}
		var m Mon
		if m.Decode(xdr.NewReader(b)) == nil && (len(m.MonID.MonName) > SMMaxStrLen || len(m.MonID.MyID.MyName) > SMMaxStrLen) {
			t.Fatal("long mon")
		}
		var id MonID
		id.Decode(xdr.NewReader(b))
		var my MyID
		my.Decode(xdr.NewReader(b))
		var c StatChange
		c.Decode(xdr.NewReader(b))
		var st Status
		st.Decode(xdr.NewReader(b))
		var sr StatRes
		sr.Decode(xdr.NewReader(b))
	})
}

// FuzzProgram: every procedure on arbitrary arguments answers a
// well-formed reply.
func FuzzProgram(f *testing.F) {
	f.Add(uint8(ProcMon), (&Mon{MonID: MonID{MonName: "h"}}).Append(nil))
	f.Add(uint8(ProcNotify), (&StatChange{MonName: "h", State: 3}).Append(nil))
	s, err := Start(Config{StateDir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, proc uint8, args []byte) {
		if uint32(proc%8) == ProcSimuCrash {
			return // notifies hosts: covered by TestProcedures
		}
		msg := dispatch(t, s, "127.0.0.1:700", uint32(proc%8), args)
		if _, _, err := oncrpc.DecodeReplyHeader(msg); err != nil {
			t.Fatalf("bad reply %x: %v", msg, err)
		}
	})
}
