package nlm

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/locks"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// maxCallbacks bounds the callbacks in flight; beyond it _RES callbacks
// are dropped (logged), so a client flooding _MSG calls costs bounded
// goroutines.
const maxCallbacks = 64

// target is where a callback goes: the client's NLM at its address,
// found through its rpcbind, over the transport it used, from the server
// address it reached (the Linux client matches GRANTED on it).
type target struct {
	vers      uint32
	transport oncrpc.Transport
	remote    netip.Addr
	local     netip.Addr
}

func targetOf(call *oncrpc.Call) target {
	t := target{vers: call.Vers, transport: call.Conn.Transport, remote: clientAddr(call), local: call.Conn.Local.Addr().Unmap()}
	if t.transport != oncrpc.UDP {
		t.transport = oncrpc.TCP
	}
	return t
}

// callback sends one call to the client's NLM and waits for its RPC
// reply (the _MSG and _RES procedures answer void).
func (s *Server) callback(t target, proc uint32, args []byte) error {
	ctx, cancel := context.WithTimeout(s.ctx, 2*s.cfg.CallbackTimeout)
	defer cancel()
	network, prot := "tcp", uint32(rpcbind.ProtoTCP)
	if t.transport == oncrpc.UDP {
		network, prot = "udp", rpcbind.ProtoUDP
	}
	port, err := s.clientPort(ctx, t, prot)
	if err != nil {
		return err
	}
	conn, err := DialCallback(ctx, network, t.local, netip.AddrPortFrom(t.remote, port).String(), s.cfg.CallbackTimeout)
	if err != nil {
		return err
	}
	c := oncrpc.NewClient(conn)
	defer c.Close()
	c.SetCred(oncrpc.NewAuthSys(s.cfg.MachineName, 0, 0))
	cctx, ccancel := context.WithTimeout(ctx, s.cfg.CallbackTimeout)
	defer ccancel()
	_, err = c.Call(cctx, &oncrpc.ClientCall{Prog: Prog, Vers: t.vers, Proc: proc, Args: args})
	return err
}

// clientPort asks the client's rpcbind for its NLM port.
func (s *Server) clientPort(ctx context.Context, t target, prot uint32) (uint16, error) {
	addr := net.JoinHostPort(t.remote.String(), strconv.Itoa(s.cfg.ClientPortmapPort))
	pm, err := oncrpc.Dial(ctx, "udp", addr)
	if err != nil {
		return 0, err
	}
	defer pm.Close()
	gctx, cancel := context.WithTimeout(ctx, s.cfg.CallbackTimeout)
	defer cancel()
	port, err := rpcbind.GetPort(gctx, pm, Prog, t.vers, prot)
	if err != nil {
		return 0, fmt.Errorf("client rpcbind %s: %w", addr, err)
	}
	return port, nil
}

// async runs f in a goroutine of the server, unless maxCallbacks are
// running.
func (s *Server) async(what string, f func()) {
	select {
	case s.callbacks <- struct{}{}:
	default:
		s.log.Warn("too many callbacks in flight; dropping one", zap.String("callback", what))
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.callbacks }()
		f()
	}()
}

// msg wraps a synchronous procedure as its _MSG variant: the call is
// answered void at once and the result goes to the client's NLM as the
// _RES call resProc, as the Linux server does.
func (s *Server) msg(resProc uint32, h oncrpc.Handler) oncrpc.Handler {
	return func(ctx context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
		tmp := oncrpc.NewReply(nil)
		if err := h(ctx, call, &tmp); err != nil {
			return err
		}
		args := clone(tmp.Head)
		t := targetOf(call)
		s.async("NLM _RES", func() {
			if err := s.callback(t, resProc, args); err != nil {
				s.log.Info("NLM _RES callback failed", zap.Uint32("proc", resProc), zap.Stringer("client", t.remote), zap.Error(err))
			}
		})
		return nil
	}
}

func cookieOf(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// granted is the table's Config.Granted: a blocked LOCK got its lock.
// The client is told with GRANTED_MSG until it answers GRANTED_RES.
func (s *Server) granted(w *locks.Waiter) {
	b, ok := w.Cookie.(*block)
	if !ok || b == nil {
		return
	}
	b.answered = make(chan Stat, 1)
	s.mu.Lock()
	s.grants[b.id] = b
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sendGranted(b)
	}()
}

// pending reports whether b still waits for its GRANTED_RES.
func (s *Server) pending(b *block) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants[b.id] == b
}

func (s *Server) done(b *block) {
	s.mu.Lock()
	if s.grants[b.id] == b {
		delete(s.grants, b.id)
	}
	s.mu.Unlock()
}

func (s *Server) sendGranted(b *block) {
	args := b.args
	args.Cookie = cookieOf(b.id)
	args.Lock.CallerName = s.cfg.MachineName
	msg := args.Append(nil, b.vers)
	t := target{vers: b.vers, transport: b.transport, remote: b.remote, local: b.local}
	if t.transport != oncrpc.UDP {
		t.transport = oncrpc.TCP
	}
	for attempt := 1; attempt <= s.cfg.GrantAttempts; attempt++ {
		if !s.pending(b) || !s.holds(b) {
			s.done(b)
			return
		}
		if err := s.callback(t, ProcGrantedMsg, msg); err != nil {
			s.log.Info("GRANTED_MSG not delivered", zap.Stringer("client", b.remote), zap.Int("attempt", attempt), zap.Error(err))
		}
		timer := time.NewTimer(s.cfg.GrantRetry)
		select {
		case <-s.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
			continue
		case st := <-b.answered:
			timer.Stop()
			switch st {
			case Granted:
				s.done(b)
				return
			case DeniedGracePeriod:
				continue
			}
			// The client does not want the lock (its request was
			// cancelled or interrupted): give it back.
			s.done(b)
			s.table.Unlock(b.file, b.lock.Owner, b.lock.Start, b.lock.End)
			s.log.Info("client refused a granted lock; released", zap.Stringer("client", b.remote), zap.Stringer("stat", st))
			return
		}
	}
	s.done(b)
	s.log.Warn("GRANTED_MSG unanswered; the lock stays granted for the client's re-poll", zap.Stringer("client", b.remote))
}

// holds reports whether b's owner still holds b's lock.
func (s *Server) holds(b *block) bool {
	for _, l := range s.table.Locks(b.file) {
		if l.Owner == b.lock.Owner && l.Exclusive == b.lock.Exclusive && l.Start <= b.lock.Start && l.End >= b.lock.End {
			return true
		}
	}
	return false
}

// forgetGrants stops GRANTED callbacks for lock on file: the client
// learnt of the grant from a re-poll.
func (s *Server) forgetGrants(file string, l locks.Lock) {
	s.mu.Lock()
	for id, b := range s.grants {
		if b.file == file && b.lock == l {
			delete(s.grants, id)
		}
	}
	s.mu.Unlock()
}

// grantedRes is GRANTED_RES: the client's answer to GRANTED_MSG, matched
// by the cookie the server chose and the client's address.
func (s *Server) grantedRes(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
	var res Res
	var r xdr.Reader
	if err := res.Decode(call.ArgsReader(&r)); err != nil {
		return oncrpc.ErrGarbageArgs
	}
	if len(res.Cookie) != 8 {
		return nil
	}
	id := binary.BigEndian.Uint64(res.Cookie)
	s.mu.Lock()
	b := s.grants[id]
	s.mu.Unlock()
	if b == nil || b.remote != clientAddr(call) {
		return nil
	}
	select {
	case b.answered <- res.Stat:
	default:
	}
	return nil
}
