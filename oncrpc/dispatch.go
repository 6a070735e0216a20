package oncrpc

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"
)

// Dispatcher routes decoded calls to static program tables. It is shared by
// every transport and every connection; it holds no per-call state.
type Dispatcher struct {
	programs []*Program
	drc      *DRC
	log      *zap.Logger
	stats    *dispatchStats
}

// NewDispatcher returns a dispatcher for programs. drc may be nil to disable
// the duplicate request cache.
func NewDispatcher(log *zap.Logger, drc *DRC, programs ...*Program) *Dispatcher {
	return &Dispatcher{programs: programs, drc: drc, log: log, stats: newDispatchStats(programs)}
}

// Programs returns the program tables, for rpcbind registration.
func (d *Dispatcher) Programs() []*Program { return d.programs }

func (d *Dispatcher) program(prog uint32) *Program {
	if i := d.programIndex(prog); i >= 0 {
		return d.programs[i]
	}
	return nil
}

// programIndex returns the index of program prog in d.programs, or -1.
func (d *Dispatcher) programIndex(prog uint32) int {
	for i, p := range d.programs {
		if p.Prog == prog {
			return i
		}
	}
	return -1
}

// Quick reports whether the RPC call in msg names a procedure marked
// Quick. It reads only the fixed header words; anything it cannot place
// is not quick.
func (d *Dispatcher) Quick(msg []byte) bool {
	prog, vers, proc, ok := PeekCallProc(msg)
	if !ok {
		return false
	}
	p := d.program(prog)
	if p == nil {
		return false
	}
	v := p.version(vers)
	return v != nil && uint64(proc) < uint64(len(v.Procs)) && v.Procs[proc].Quick
}

// Dispatch decodes the RPC message of the exchange ex into call, runs the
// procedure and leaves the complete RPC reply in reply, which it binds to
// ex (payload buffers and splicing come from ex). It returns false when no
// reply is to be sent: a message that is not a call, a header too short to
// carry an XID, or a retransmission of a call still in progress.
//
// The message must stay valid until the reply has been sent (call.Args
// points into it).
func (d *Dispatcher) Dispatch(ctx context.Context, ex Exchange, call *Call, reply *Reply) bool {
	msg := ex.Message()
	conn := ex.Peer()
	cc := d.counts(conn)
	if cc == nil {
		return d.dispatch(ctx, ex, msg, conn, cc, call, reply)
	}
	answered := d.dispatch(ctx, ex, msg, conn, cc, call, reply)
	out := 0
	if answered {
		out = reply.Len()
	}
	t := conn.Transport
	if int(t) >= numTransports {
		t = 0
	}
	b := &cc.bytes[t]
	b[0].Add(uint64(len(msg)))
	b[1].Add(uint64(out))
	return answered
}

// dispatch runs the call; cc (nil: not counting) gets its counts.
func (d *Dispatcher) dispatch(ctx context.Context, ex Exchange, msg []byte, conn *Peer, cc *connCounts, call *Call, reply *Reply) bool {
	reply.Reset()
	reply.ex = ex
	hdr, off, err := DecodeCallHeader(msg)
	if err != nil {
		var he *HeaderError
		errors.As(err, &he)
		if he == nil || !he.XIDValid || he.NotCall {
			if ce := d.log.Check(zap.DebugLevel, "dropping message"); ce != nil {
				ce.Write(zap.Stringer("remote", conn.Remote), zap.Error(err))
			}
			cc.uncount()
			return false
		}
		if he.Auth != AuthOK {
			cc.reject(rejectAuth)
			d.log.Info("credential rejected", zap.Stringer("remote", conn.Remote), zap.Uint32("xid", hdr.XID), zap.Stringer("stat", he.Auth), zap.Error(err))
			reply.Head = AppendAuthError(reply.Head, hdr.XID, he.Auth)
			return true
		}
		cc.reject(rejectGarbageHeader)
		d.log.Info("garbage RPC header", zap.Stringer("remote", conn.Remote), zap.Uint32("xid", hdr.XID), zap.Error(err))
		reply.Head = AppendAcceptedHeader(reply.Head, hdr.XID, GarbageArgs)
		return true
	}
	*call = Call{CallHeader: hdr, Args: msg[off:], Conn: conn, ex: ex}
	if hdr.RPCVers != RPCVersion {
		cc.reject(rejectRPCMismatch)
		d.log.Info("RPC version mismatch", zap.Stringer("remote", conn.Remote), zap.Uint32("rpcvers", hdr.RPCVers))
		reply.Head = AppendRPCMismatch(reply.Head, hdr.XID)
		return true
	}
	if stat := d.authenticate(call); stat != AuthOK {
		cc.reject(rejectAuth)
		d.log.Info("credential rejected", zap.Stringer("remote", conn.Remote), zap.Uint32("flavor", hdr.Cred.Flavor), zap.Stringer("stat", stat))
		reply.Head = AppendAuthError(reply.Head, hdr.XID, stat)
		return true
	}
	pi := d.programIndex(hdr.Prog)
	if pi < 0 {
		cc.reject(rejectProgUnavail)
		reply.Head = AppendAcceptedHeader(reply.Head, hdr.XID, ProgUnavail)
		return true
	}
	prog := d.programs[pi]
	vi := prog.versionIndex(hdr.Vers)
	if vi < 0 {
		cc.reject(rejectProgMismatch)
		low, high := prog.versionRange()
		reply.Head = AppendProgMismatch(reply.Head, hdr.XID, low, high)
		return true
	}
	version := &prog.Versions[vi]
	if uint64(hdr.Proc) >= uint64(len(version.Procs)) || version.Procs[hdr.Proc].Handler == nil {
		cc.reject(rejectProcUnavail)
		reply.Head = AppendAcceptedHeader(reply.Head, hdr.XID, ProcUnavail)
		return true
	}
	proc := &version.Procs[hdr.Proc]

	var key drcKey
	cached := d.drc != nil && !proc.Idempotent
	if cached {
		key = newDRCKey(call)
		switch act, head := d.drc.begin(key, reply.Head); act {
		case drcDrop:
			cc.uncount()
			return false
		case drcReplay:
			cc.uncount()
			reply.Head = head
			return true
		}
	}
	var start time.Time
	timed := cc != nil && timed(hdr.XID)
	if timed {
		start = time.Now()
	}
	resultsAt, outcome := d.run(ctx, proc, call, reply)
	var took time.Duration
	if timed {
		took = time.Since(start)
	}
	if cc != nil {
		// Count the call by its status (stats.go). Written out here,
		// not in a function, so that the common case costs one add.
		s := d.stats
		lay := &s.layout[pi][vi][hdr.Proc]
		idx := outcome
		if lay.named {
			idx = s.statusIndex(pi, proc, reply.Head, resultsAt, outcome)
		}
		n := cc.progs[pi].Load()
		if n == nil {
			n = cc.newProgram(s, pi)
		}
		(*n)[lay.off+idx].Add(1)
		if timed {
			s.latency[pi][vi][hdr.Proc].Observe(took)
		}
	}
	if cached {
		d.drc.finish(key, reply)
	}
	return true
}

// run runs the procedure and returns where its results begin in
// reply.Head and the outcome for the counters.
func (d *Dispatcher) run(ctx context.Context, proc *Procedure, call *Call, reply *Reply) (resultsAt, outcome int) {
	reply.Head = AppendAcceptedHeader(reply.Head, call.XID, Success)
	resultsAt = len(reply.Head)
	err := proc.Handler(ctx, call, reply)
	if err == nil && call.authReject != AuthOK {
		err = &AuthError{Stat: call.authReject}
	}
	if err == nil {
		return resultsAt, outcomeSuccess
	}
	reply.Reset()
	var ae *AuthError
	switch {
	case errors.Is(err, ErrGarbageArgs):
		if ce := d.log.Check(zap.DebugLevel, "garbage arguments"); ce != nil {
			ce.Write(zap.String("proc", proc.Name), zap.Stringer("remote", call.Conn.Remote))
		}
		reply.Head = AppendAcceptedHeader(reply.Head, call.XID, GarbageArgs)
		return 0, outcomeGarbageArgs
	case errors.As(err, &ae):
		reply.Head = AppendAuthError(reply.Head, call.XID, ae.Stat)
		return 0, outcomeAuthError
	default:
		d.log.Error("procedure failed", zap.String("proc", proc.Name), zap.Stringer("remote", call.Conn.Remote), zap.Error(err))
		reply.Head = AppendAcceptedHeader(reply.Head, call.XID, SystemErr)
		return 0, outcomeSystemErr
	}
}

// authenticate checks the credential and verifier as knfsd does for
// AUTH_NONE and AUTH_SYS (RFC 5531 section 8.2 and appendix A); every other
// flavor is AUTH_BADCRED.
func (d *Dispatcher) authenticate(call *Call) AuthStat {
	switch call.Cred.Flavor {
	case AuthNone:
		if len(call.Cred.Body) != 0 {
			return AuthBadCred
		}
	case AuthSys:
		if err := DecodeAuthSys(call.Cred.Body, &call.Unix); err != nil {
			return AuthBadCred
		}
		call.HasUnix = true
	default:
		return AuthBadCred
	}
	if call.Verf.Flavor != AuthNone || len(call.Verf.Body) != 0 {
		return AuthBadVerf
	}
	return AuthOK
}
