package conformance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nlm"
	"github.com/gonfsrdma/gonfsrdma/nsm"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// lockEnv is what the lock tests share during a run: the server's NLM
// and NSM ports and the suite's callback service, which plays the
// client host's lockd and statd: it receives GRANTED_MSG, the _RES calls
// and SM_NOTIFY from the server.
type lockEnv struct {
	once     sync.Once
	err      error
	nlmTCP   string
	nlmUDP   string
	nsmUDP   string
	nsmTCP   string
	peerOnce sync.Once
	peerErr  error
	peer     *callbackPeer
}

// event is one call the callback service received.
type event struct {
	Prog, Vers, Proc uint32
	Args             []byte
	From             netip.Addr
}

type callbackPeer struct {
	srv   *oncrpc.Server
	pmap  string
	maps  []rpcbind.Mapping
	mu    sync.Mutex
	evs   []event
	token chan struct{}
}

func (l *lockEnv) close() {
	if l == nil || l.peer == nil {
		return
	}
	p := l.peer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := dialPortmap(ctx, p.pmap); err == nil {
		for _, m := range p.maps {
			rpcbind.Unset(ctx, c, m.Prog, m.Vers, m.Netid)
		}
		c.Close()
	}
	p.srv.Shutdown(ctx)
}

// ports resolves the server's NLM v4 and NSM v1 ports through rpcbind.
func (e *Env) lockPorts() error {
	l := e.lock
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(e.Ctx, 10*time.Second)
		defer cancel()
		pm, err := oncrpc.Dial(ctx, "tcp", e.PortmapAddr)
		if err != nil {
			l.err = fmt.Errorf("rpcbind: %w", err)
			return
		}
		defer pm.Close()
		get := func(prog, vers, prot uint32, what string) string {
			p, err := rpcbind.GetPort(ctx, pm, prog, vers, prot)
			if err != nil && l.err == nil {
				l.err = fmt.Errorf("rpcbind knows no %s: %w", what, err)
			}
			return hostPort(e.Cfg.Server, int(p))
		}
		l.nlmTCP = get(nlm.Prog, nlm.Vers4, rpcbind.ProtoTCP, "NLM v4 over TCP")
		l.nlmUDP = get(nlm.Prog, nlm.Vers4, rpcbind.ProtoUDP, "NLM v4 over UDP")
		l.nsmUDP = get(nsm.Prog, nsm.Vers1, rpcbind.ProtoUDP, "NSM v1 over UDP")
		l.nsmTCP = get(nsm.Prog, nsm.Vers1, rpcbind.ProtoTCP, "NSM v1 over TCP")
	})
	return l.err
}

// nlmClient connects to the server's NLM over network ("tcp", "udp").
func (e *Env) nlmClient(network string) (*oncrpc.Client, error) {
	if err := e.lockPorts(); err != nil {
		return nil, err
	}
	addr := e.lock.nlmTCP
	if network == "udp" {
		addr = e.lock.nlmUDP
	}
	c, err := oncrpc.Dial(e.Ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.SetCred(e.Cred)
	return c, nil
}

// nsmClient connects to the server's NSM over UDP (as statds do).
func (e *Env) nsmClient() (*oncrpc.Client, error) {
	if err := e.lockPorts(); err != nil {
		return nil, err
	}
	c, err := oncrpc.Dial(e.Ctx, "udp", e.lock.nsmUDP)
	if err != nil {
		return nil, err
	}
	c.SetCred(e.Cred)
	return c, nil
}

// callbacks starts the callback service once: on the address this host
// uses to reach the server, TCP and UDP, registered for NLM v4 and NSM v1
// with the rpcbind at Cfg.CallbackPortmap.
func (e *Env) callbacks() (*callbackPeer, error) {
	l := e.lock
	l.peerOnce.Do(func() {
		if e.Cfg.CallbackPortmap == "" {
			l.peerErr = errors.New("no callback rpcbind configured")
			return
		}
		if err := e.lockPorts(); err != nil {
			l.peerErr = err
			return
		}
		probe, err := net.Dial("udp", l.nlmUDP)
		if err != nil {
			l.peerErr = err
			return
		}
		local := probe.LocalAddr().(*net.UDPAddr).IP
		probe.Close()
		p := &callbackPeer{pmap: e.Cfg.CallbackPortmap, token: make(chan struct{}, 1)}
		ln, pc, err := listenPair(net.JoinHostPort(local.String(), "0"))
		if err != nil {
			l.peerErr = err
			return
		}
		port := uint16(ln.Addr().(*net.TCPAddr).Port)
		p.srv = oncrpc.NewServer(zap.NewNop(), oncrpc.NewDispatcher(zap.NewNop(), nil, p.programs()...), oncrpc.ServerConfig{})
		go p.srv.ServeTCP(ln)
		go p.srv.ServeUDP(pc)
		ctx, cancel := context.WithTimeout(e.Ctx, 10*time.Second)
		defer cancel()
		c, err := dialPortmap(ctx, p.pmap)
		if err != nil {
			l.peerErr = fmt.Errorf("callback rpcbind %s: %w", p.pmap, err)
			p.srv.Shutdown(ctx)
			return
		}
		defer c.Close()
		for _, n := range []string{"tcp", "udp"} {
			p.maps = append(p.maps, rpcbind.NewMapping(nlm.Prog, nlm.Vers4, n, port))
		}
		p.maps = append(p.maps, rpcbind.NewMapping(nsm.Prog, nsm.Vers1, "udp", port))
		for _, m := range p.maps {
			rpcbind.Unset(ctx, c, m.Prog, m.Vers, m.Netid)
			if ok, err := rpcbind.Set(ctx, c, m); err != nil || !ok {
				l.peerErr = fmt.Errorf("registering the callback service (%d/%d/%s) with %s: %v %v", m.Prog, m.Vers, m.Netid, p.pmap, ok, err)
				p.srv.Shutdown(ctx)
				return
			}
		}
		l.peer = p
	})
	return l.peer, l.peerErr
}

// dialPortmap connects to the callback rpcbind: "host:port" over TCP, or
// a path (such as /run/rpcbind.sock) over its local stream socket, where
// the system rpcbind takes SET and UNSET from root (it refuses them over
// TCP from an unprivileged port, even on loopback).
func dialPortmap(ctx context.Context, addr string) (*oncrpc.Client, error) {
	if strings.HasPrefix(addr, "/") {
		return oncrpc.Dial(ctx, "unix", addr)
	}
	return oncrpc.Dial(ctx, "tcp", addr)
}

func listenPair(addr string) (net.Listener, net.PacketConn, error) {
	for range 5 {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		host, _, _ := net.SplitHostPort(addr)
		pc, err := net.ListenPacket("udp", net.JoinHostPort(host, fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)))
		if err == nil {
			return ln, pc, nil
		}
		ln.Close()
	}
	return nil, nil, errors.New("no free TCP+UDP port pair")
}

// programs are the callback service's: NLM v4's client-side procedures
// and NSM's NOTIFY. Every call is recorded; GRANTED answers GRANTED.
func (p *callbackPeer) programs() []*oncrpc.Program {
	record := func(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
		p.mu.Lock()
		p.evs = append(p.evs, event{Prog: call.Prog, Vers: call.Vers, Proc: call.Proc, Args: append([]byte(nil), call.Args...), From: call.Conn.Remote.Addr().Unmap()})
		p.mu.Unlock()
		select {
		case p.token <- struct{}{}:
		default:
		}
		return nil
	}
	nlmProcs := make([]oncrpc.Procedure, nlm.ProcGrantedRes+1)
	for i := range nlmProcs {
		nlmProcs[i] = oncrpc.Procedure{Name: "cb", Handler: record, Idempotent: true}
	}
	nlmProcs[nlm.ProcGranted].Handler = func(ctx context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
		record(ctx, call, reply)
		var a nlm.TestArgs
		if err := a.Decode(xdr.NewReader(call.Args), call.Vers); err != nil {
			return oncrpc.ErrGarbageArgs
		}
		res := nlm.Res{Cookie: a.Cookie, Stat: nlm.Granted}
		reply.Head = res.Append(reply.Head)
		return nil
	}
	nsmProcs := make([]oncrpc.Procedure, nsm.ProcNotify+1)
	for i := range nsmProcs {
		nsmProcs[i] = oncrpc.Procedure{Name: "cb", Handler: record, Idempotent: true}
	}
	return []*oncrpc.Program{
		{Prog: nlm.Prog, Name: "nlm-callback", Versions: []oncrpc.Version{{Vers: nlm.Vers4, Procs: nlmProcs}}},
		{Prog: nsm.Prog, Name: "nsm-callback", Versions: []oncrpc.Version{{Vers: nsm.Vers1, Procs: nsmProcs}}},
	}
}

// await returns (and consumes) the first event match accepts, waiting up
// to d.
func (p *callbackPeer) await(ctx context.Context, d time.Duration, match func(*event) bool) (event, error) {
	deadline := time.Now().Add(d)
	for {
		p.mu.Lock()
		for i := range p.evs {
			if match(&p.evs[i]) {
				ev := p.evs[i]
				p.evs = append(p.evs[:i], p.evs[i+1:]...)
				p.mu.Unlock()
				return ev, nil
			}
		}
		p.mu.Unlock()
		left := time.Until(deadline)
		if left <= 0 {
			return event{}, fmt.Errorf("no such callback within %v", d)
		}
		select {
		case <-ctx.Done():
			return event{}, ctx.Err()
		case <-p.token:
		case <-time.After(min(left, 50*time.Millisecond)):
		}
	}
}

// none reports an error when an event match accepts arrives within d.
func (p *callbackPeer) none(ctx context.Context, d time.Duration, match func(*event) bool, what string) error {
	if _, err := p.await(ctx, d, match); err == nil {
		return fmt.Errorf("unexpected %s", what)
	}
	return ctx.Err()
}
