package softfabric

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// errInjectedDrop is the reason a connection dropped by
// FaultPlan.DropAfter reports; it matches verbs.ErrDisconnected.
var errInjectedDrop = fmt.Errorf("softfabric: disconnected (injected fault: DropAfter): %w", verbs.ErrDisconnected)

// Fabric is an in-process software RDMA fabric implementing verbs.Provider.
// Endpoints are arbitrary address strings ("fabric-a:20049"). It models an
// RC queue pair closely enough to test an RPC-over-RDMA transport:
//
//   - memory regions with lkeys, rkeys, access flags and bounds; an RDMA
//     Read/Write with a wrong, invalidated or out-of-bounds rkey completes
//     with IBV_WC_REM_ACCESS_ERR on the requester and kills the responder's
//     QP with IBV_EVENT_QP_ACCESS_ERR;
//   - a Send that finds no Receive posted fails with
//     IBV_WC_RNR_RETRY_EXC_ERR (rnr_retry 0); a Send larger than the
//     Receive is IBV_WC_LOC_LEN_ERR on the receiver and
//     IBV_WC_REM_INV_REQ_ERR on the sender;
//   - send-queue WRs execute in order on a per-Conn goroutine, so RDMA
//     Writes land before a following Send;
//   - Send-With-Invalidate invalidates the named rkey on the receiver;
//   - type 2 memory windows (AllocWindow, OpBindMW, OpLocalInv) grant
//     access to a range of an MR only while bound, with the binding's rkey;
//   - a QP in error flushes every outstanding WR with IBV_WC_WR_FLUSH_ERR.
//     Any error completion also disconnects the peer, as the Linux ULPs do
//     on their first error completion.
//
// Faults are injected with SetFaults; Stats counts live objects so tests
// can assert that nothing leaked.
type Fabric struct {
	mu        sync.Mutex
	listeners map[string]*fabListener
	clientSeq int
	// conns are the Conns not yet Closed, removed the hosts whose device
	// is removed (fabric_device.go).
	conns   map[*fabConn]struct{}
	removed map[string]bool

	mrSeq     atomic.Uint32
	noWindows atomic.Bool // DisableWindows
	plan      atomic.Pointer[planState]
	corrupt   atomic.Int64

	nListeners     atomic.Int64
	nConns         atomic.Int64
	nMRs           atomic.Int64
	nWindows       atomic.Int64
	nBinds         atomic.Int64
	nInvalidations atomic.Int64
	mrBytes        atomic.Int64
	postedRecvs    atomic.Int64
	postedSends    atomic.Int64
	sendWatches    atomic.Int64

	movedSend, movedWrite, movedRead atomic.Int64
}

var (
	_ verbs.Provider     = (*Fabric)(nil)
	_ verbs.MemoryPinner = (*Fabric)(nil)
)

// PinsMemory implements verbs.MemoryPinner: the fabric's registrations
// are ordinary anonymous memory, never locked.
func (f *Fabric) PinsMemory() bool { return false }

// NewFabric returns an empty fabric.
func NewFabric() *Fabric {
	return &Fabric{listeners: make(map[string]*fabListener), conns: make(map[*fabConn]struct{})}
}

// FaultPlan describes faults the fabric injects.
type FaultPlan struct {
	// DropAfter, when > 0, disconnects a connection after it has executed
	// DropAfter send-queue WRs (both sides together, counted from
	// SetFaults or connection set-up, whichever is later); the next WR is
	// flushed instead. Both sides' Err match ErrDisconnected.
	DropAfter int
	// CompletionDelay delays the execution, and so the completions, of
	// every send-queue WR (and the Receive it consumes) by this long.
	CompletionDelay time.Duration
	// CorruptRKeys corrupts the rkey of the next CorruptRKeys RDMA
	// Read/Write operations executed anywhere on the fabric, which makes
	// them fail with IBV_WC_REM_ACCESS_ERR.
	CorruptRKeys int
	// LoseSends loses the LoseSends Sends (and Sends-With-Invalidate)
	// executed anywhere on the fabric after the first LoseSendsAfter ones
	// (counted from SetFaults): each completes successfully at the
	// sender, is never delivered, and leaves the receiver's Receive
	// posted, with no error or disconnect on either side. It models a
	// message lost on a dead link whose peer then vanished without a
	// word (its disconnect lost too): only a timeout notices.
	LoseSends, LoseSendsAfter int
	// SendAckLag delivers every Send (and Send-With-Invalidate) at once
	// but completes it at the sender, and frees its send-queue slot, only
	// SendAckLag later. The WRs behind it still execute at once (the link
	// is pipelined) and complete in order after it. It models a link whose
	// acknowledgements come late (Soft-RoCE): the peer answers, and its
	// answer arrives, while the sender still holds the slots of the
	// messages answered.
	SendAckLag time.Duration
}

type planState struct {
	FaultPlan
	gen uint64
	// sends counts the Sends executed under this plan, for LoseSends.
	sends atomic.Int64
}

// loseSend reports whether the Send being executed is lost (LoseSends).
func (p *planState) loseSend() bool {
	if p == nil || p.LoseSends <= 0 {
		return false
	}
	n := p.sends.Add(1)
	return n > int64(p.LoseSendsAfter) && n <= int64(p.LoseSendsAfter)+int64(p.LoseSends)
}

// SetFaults replaces the fault plan; the zero FaultPlan disables faults.
func (f *Fabric) SetFaults(p FaultPlan) {
	old := f.plan.Load()
	var gen uint64 = 1
	if old != nil {
		gen = old.gen + 1
	}
	f.plan.Store(&planState{FaultPlan: p, gen: gen})
	f.corrupt.Store(int64(p.CorruptRKeys))
}

// takeCorrupt reports whether the current RDMA operation must use a
// corrupted rkey.
func (f *Fabric) takeCorrupt() bool {
	return f.corrupt.Load() > 0 && f.corrupt.Add(-1) >= 0
}

// FabricStats counts live fabric objects.
type FabricStats struct {
	Listeners   int   // open Listeners
	Conns       int   // Conns created and not yet Closed (accepted or not)
	MRs         int   // registered, not yet Deregistered memory regions
	MRBytes     int64 // bytes in those regions
	PostedRecvs int   // Receive WRs posted and not yet completed
	PostedSends int   // send-queue WRs posted and not yet completed
	Windows     int   // allocated, not yet Freed memory windows
	SendWatches int   // WatchSend holds of open Conns not yet released (Config.LazySend)
}

// WindowOps counts, since NewFabric, the window binds executed and the
// bindings invalidated (by OpLocalInv or a peer's Send-With-Invalidate).
func (f *Fabric) WindowOps() (binds, invalidations int64) {
	return f.nBinds.Load(), f.nInvalidations.Load()
}

// Stats returns the current counts.
func (f *Fabric) Stats() FabricStats {
	return FabricStats{
		Listeners:   int(f.nListeners.Load()),
		Conns:       int(f.nConns.Load()),
		MRs:         int(f.nMRs.Load()),
		MRBytes:     f.mrBytes.Load(),
		PostedRecvs: int(f.postedRecvs.Load()),
		PostedSends: int(f.postedSends.Load()),
		Windows:     int(f.nWindows.Load()),
		SendWatches: int(f.sendWatches.Load()),
	}
}

// FabricMoved counts the bytes the fabric has moved between registered
// buffers since it was made, by operation: what a NIC would DMA. The
// benchmarks divide it by the payload to show how often each payload
// byte crossed the wire.
type FabricMoved struct {
	Send  int64 // Send and Send-with-Invalidate payloads placed in Receives
	Write int64 // RDMA Write
	Read  int64 // RDMA Read
}

// Moved returns the byte counts so far.
func (f *Fabric) Moved() FabricMoved {
	return FabricMoved{Send: f.movedSend.Load(), Write: f.movedWrite.Load(), Read: f.movedRead.Load()}
}

// Listen implements Provider.
func (f *Fabric) Listen(addr string) (verbs.Listener, error) {
	if addr == "" {
		return nil, errors.New("verbs: fabric: empty listen address")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removed[hostOf(addr)] {
		return nil, fmt.Errorf("%w: %s", errNoDevice, addr)
	}
	if _, ok := f.listeners[addr]; ok {
		return nil, errors.New("verbs: fabric: address in use: " + addr)
	}
	ln := &fabListener{fab: f, addr: addr, reqs: make(chan *fabRequest, 128), done: make(chan struct{}), removed: make(chan struct{})}
	f.listeners[addr] = ln
	f.nListeners.Add(1)
	return ln, nil
}

// Dial implements Provider.
func (f *Fabric) Dial(ctx context.Context, addr string, p verbs.ConnParams) (verbs.Conn, error) {
	cfg, err := p.Config.WithDefaults()
	if err != nil {
		return nil, err
	}
	if len(p.PrivateData) > verbs.MaxReqPrivateData {
		return nil, verbs.ErrPrivateDataTooLong
	}
	f.mu.Lock()
	f.clientSeq++
	local := "fabric-client-" + strconv.Itoa(f.clientSeq) + ":" + strconv.Itoa(40000+f.clientSeq%20000)
	f.mu.Unlock()
	if p.LocalAddr != "" {
		local = p.LocalAddr
	}

	l := &link{}
	c := f.newConn(l, 0, cfg, local, addr)
	if p.Prepare != nil {
		if err := p.Prepare(c); err != nil {
			c.Close()
			return nil, err
		}
	}
	f.mu.Lock()
	ln := f.listeners[addr]
	if f.removed[hostOf(addr)] {
		ln = nil
	}
	f.mu.Unlock()
	if ln == nil {
		c.Close()
		return nil, &verbs.RejectError{Status: verbs.RejectInvalidServiceID}
	}
	req := &fabRequest{
		link:    l,
		client:  c,
		priv:    padded(p.PrivateData, verbs.MaxReqPrivateData),
		ird:     p.InitiatorDepth,
		ord:     p.ResponderResources,
		remote:  local,
		local:   addr,
		decided: make(chan struct{}),
	}
	l.mu.Lock()
	l.req = req
	l.mu.Unlock()
	if !ln.enqueue(req) {
		c.Close()
		return nil, &verbs.RejectError{Status: verbs.RejectInvalidServiceID}
	}
	select {
	case <-req.decided:
	case <-ctx.Done():
		l.mu.Lock()
		if !req.answered {
			req.answered, req.abandoned = true, true
			l.mu.Unlock()
			c.Close()
			return nil, ctx.Err()
		}
		l.mu.Unlock()
	}
	l.mu.Lock()
	accepted, rej := req.accepted, req.rejPriv
	l.mu.Unlock()
	if !accepted {
		c.Close()
		return nil, &verbs.RejectError{Status: verbs.RejectConsumer, PrivateData: rej}
	}
	return c, nil
}

func padded(b []byte, n int) []byte {
	out := make([]byte, n)
	copy(out, b)
	return out
}

// fabListener implements Listener.
type fabListener struct {
	fab    *Fabric
	addr   string
	mu     sync.Mutex
	closed bool
	reqs   chan *fabRequest
	done   chan struct{}
	// removed is closed, and removedErr set, when the listener's device
	// is removed (fabric_device.go).
	removed    chan struct{}
	removedErr error
}

func (ln *fabListener) enqueue(r *fabRequest) bool {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.closed || ln.removedErr != nil {
		return false
	}
	r.ln = ln
	select {
	case ln.reqs <- r:
		return true
	default: // backlog full: the CM drops the REQ; report a refusal
		return false
	}
}

func (ln *fabListener) GetRequest(ctx context.Context) (verbs.ConnRequest, error) {
	select {
	case r := <-ln.reqs:
		return r, nil
	case <-ln.done:
		return nil, verbs.ErrClosed
	case <-ln.removed:
		ln.mu.Lock()
		defer ln.mu.Unlock()
		return nil, ln.removedErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (ln *fabListener) Addr() string { return ln.addr }

func (ln *fabListener) Close() error {
	ln.mu.Lock()
	if ln.closed {
		ln.mu.Unlock()
		return nil
	}
	ln.closed = true
	close(ln.done)
	ln.mu.Unlock()
	f := ln.fab
	f.mu.Lock()
	delete(f.listeners, ln.addr)
	f.mu.Unlock()
	f.nListeners.Add(-1)
	for {
		select {
		case r := <-ln.reqs:
			r.Reject(nil)
		default:
			return nil
		}
	}
}

// fabRequest implements ConnRequest. Fields below link are guarded by
// link.mu.
type fabRequest struct {
	ln       *fabListener
	link     *link
	client   *fabConn
	priv     []byte
	ird, ord uint8
	remote   string
	local    string
	decided  chan struct{}

	conn      *fabConn
	answered  bool
	accepted  bool
	abandoned bool
	rejPriv   []byte
}

func (r *fabRequest) PrivateData() []byte       { return r.priv }
func (r *fabRequest) RemoteAddr() string        { return r.remote }
func (r *fabRequest) LocalAddr() string         { return r.local }
func (r *fabRequest) InitiatorDepth() uint8     { return r.ird }
func (r *fabRequest) ResponderResources() uint8 { return r.ord }

func (r *fabRequest) Conn(cfg verbs.Config) (verbs.Conn, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	l := r.link
	l.mu.Lock()
	if r.conn != nil {
		l.mu.Unlock()
		return nil, errors.New("verbs: ConnRequest.Conn called twice")
	}
	if r.answered {
		l.mu.Unlock()
		if r.abandoned {
			return nil, verbs.ErrDisconnected
		}
		return nil, verbs.ErrNotConnected
	}
	l.mu.Unlock()
	c := r.ln.fab.newConn(l, 1, cfg, r.local, r.remote)
	l.mu.Lock()
	r.conn = c
	c.peerPriv = r.priv
	if r.abandoned {
		// The client gave up while the QP was being created.
		l.teardownSide(c, verbs.ErrDisconnected)
	}
	l.mu.Unlock()
	return c, nil
}

func (r *fabRequest) Accept(privateData []byte, initiatorDepth, responderResources uint8) error {
	if len(privateData) > verbs.MaxRepPrivateData {
		return verbs.ErrPrivateDataTooLong
	}
	l := r.link
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.conn == nil {
		return errors.New("verbs: Accept before ConnRequest.Conn")
	}
	if r.answered {
		if r.abandoned {
			return verbs.ErrDisconnected
		}
		return errors.New("verbs: connection request already answered")
	}
	if r.conn.state != stIdle || r.client.state != stIdle {
		return verbs.ErrDisconnected
	}
	r.answered, r.accepted = true, true
	r.client.peerPriv = padded(privateData, verbs.MaxRepPrivateData)
	r.client.state = stConnected
	r.conn.state = stConnected
	close(r.decided)
	return nil
}

func (r *fabRequest) Reject(privateData []byte) error {
	if len(privateData) > verbs.MaxRejPrivateData {
		return verbs.ErrPrivateDataTooLong
	}
	l := r.link
	l.mu.Lock()
	if r.answered {
		l.mu.Unlock()
		if r.conn != nil {
			r.conn.Close()
		}
		if r.abandoned {
			return nil
		}
		return errors.New("verbs: connection request already answered")
	}
	r.answered = true
	r.rejPriv = padded(privateData, verbs.MaxRejPrivateData)
	close(r.decided)
	c := r.conn
	l.mu.Unlock()
	if c != nil {
		c.Close()
	}
	return nil
}
