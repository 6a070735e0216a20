//go:build linux && cgo && !nordma

package verbs

/*
#include "rdma_shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Drain markers (see shim_to_error_and_drain).
const (
	drainRecvID = ^uint64(0)
	drainSendID = ^uint64(0) - 1
)

// rdmaConn implements Conn over an rdma_cm id with its own event channel,
// protection domain, completion channel, send and receive CQs and RC QP.
//
// Locking: life is read-held by every call into C that uses the QP, CQs
// or channels and write-held by Close while it destroys them; mu guards
// the state fields; postMu serializes use of the C work-request buffers.
type rdmaConn struct {
	prov *RDMAProvider
	ch   *C.struct_rdma_event_channel
	id   *C.struct_rdma_cm_id
	cmFD *pollFD
	cmEv *C.struct_shim_cm_event

	cfg    Config
	pd     *C.struct_ibv_pd
	compCh *C.struct_ibv_comp_channel
	ccFD   *pollFD
	scq    *C.struct_ibv_cq
	rcq    *C.struct_ibv_cq
	qp     *C.struct_ibv_qp
	// rxe: the device is Soft-RoCE (see shim_is_rxe and WindowBoundsEnforced).
	rxe     bool
	invMask C.uint // shim_conv_wc's inv_mask

	// C arrays reused by every post and poll.
	sendWRs *C.struct_shim_send_wr
	recvWRs *C.struct_shim_recv_wr
	sges    *C.struct_ibv_sge
	nSGE    int
	wcs     *C.struct_shim_wc
	bad     *C.int

	ccReadFn func(uintptr) bool

	local, remote string
	peerPriv      []byte

	setup  chan cmEvent // connection set-up events for Dial/Accept
	cmDone chan struct{}
	done   chan struct{}

	life   sync.RWMutex
	postMu sync.Mutex

	mu          sync.Mutex
	established bool
	dead        bool
	err         error
	closing     bool
	destroyed   bool
	nMR         int
	// peerGone: the CM reported the connection over (DISCONNECTED: the
	// peer's DREQ or DREP, or our DREQ's retries ran out) or the device
	// removed; the cm id then has no disconnect left to deliver.
	peerGone bool
	// released: the PD, the cm id and its channel are gone
	// (releaseDevice, after Close and the last MR's deregistration).
	released sync.Once

	drainedRecv, drainedSend atomic.Bool

	// Config.LazySend: sendWatch counts WatchSend holds; recvOnly is set
	// while Poll arms, and then waits on, the receive CQ alone.
	sendWatch atomic.Int32
	recvOnly  atomic.Bool
}

var _ Conn = (*rdmaConn)(nil)

func newRDMAConn(p *RDMAProvider, ch *C.struct_rdma_event_channel, id *C.struct_rdma_cm_id, fd *pollFD) *rdmaConn {
	c := &rdmaConn{
		prov: p, ch: ch, id: id, cmFD: fd,
		cmEv:   (*C.struct_shim_cm_event)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_shim_cm_event{})))),
		setup:  make(chan cmEvent, 8),
		cmDone: make(chan struct{}),
		done:   make(chan struct{}),
	}
	c.ccReadFn = c.onCompChannel
	p.liveIDs.Add(1)
	go c.cmLoop()
	return c
}

// cmLoop reads this id's CM events until Close.
func (c *rdmaConn) cmLoop() {
	defer close(c.cmDone)
	var rc C.int
	readFn := func(uintptr) bool {
		rc = C.shim_get_cm_event(c.ch, c.cmEv)
		return rc != 0
	}
	for {
		if err := c.cmFD.read(readFn); err != nil {
			return
		}
		if rc < 0 {
			continue
		}
		ev := goCMEvent(c.cmEv)
		switch ev.event {
		case C.RDMA_CM_EVENT_DISCONNECTED:
			c.mu.Lock()
			c.peerGone = true
			c.mu.Unlock()
			c.kill(ErrDisconnected)
		case C.RDMA_CM_EVENT_DEVICE_REMOVAL:
			c.mu.Lock()
			c.peerGone = true
			c.mu.Unlock()
			c.kill(&DeviceRemovedError{Device: deviceName(c.id)})
			c.prov.deviceRemoved(c.id.verbs)
		case C.RDMA_CM_EVENT_TIMEWAIT_EXIT, C.RDMA_CM_EVENT_ADDR_CHANGE:
		case C.RDMA_CM_EVENT_ESTABLISHED:
			c.mu.Lock()
			c.established = true
			c.mu.Unlock()
			c.sendSetup(ev)
		default:
			c.sendSetup(ev)
			c.mu.Lock()
			est := c.established
			c.mu.Unlock()
			if est { // an error event after set-up
				c.kill(ErrDisconnected)
			}
		}
	}
}

func (c *rdmaConn) sendSetup(ev cmEvent) {
	select {
	case c.setup <- ev:
	default:
	}
}

// waitSetup waits for the CM event want; any other set-up event is an
// error.
func (c *rdmaConn) waitSetup(ctx context.Context, want C.int) (cmEvent, error) {
	select {
	case ev := <-c.setup:
		if ev.event == want {
			return ev, nil
		}
		switch ev.event {
		case C.RDMA_CM_EVENT_REJECTED:
			return ev, &RejectError{Status: ev.status, PrivateData: ev.priv}
		case C.RDMA_CM_EVENT_ADDR_ERROR:
			return ev, fmt.Errorf("verbs: address resolution failed (status %d)", ev.status)
		case C.RDMA_CM_EVENT_ROUTE_ERROR:
			return ev, fmt.Errorf("verbs: route resolution failed (status %d)", ev.status)
		case C.RDMA_CM_EVENT_UNREACHABLE:
			return ev, fmt.Errorf("verbs: peer unreachable (status %d)", ev.status)
		case C.RDMA_CM_EVENT_CONNECT_ERROR:
			return ev, fmt.Errorf("verbs: connection error (status %d)", ev.status)
		}
		return ev, fmt.Errorf("verbs: unexpected CM event %d (status %d)", int(ev.event), ev.status)
	case <-c.done:
		return cmEvent{}, c.Err()
	case <-ctx.Done():
		return cmEvent{}, ctx.Err()
	}
}

// Dial implements Provider.
func (p *RDMAProvider) Dial(ctx context.Context, addr string, cp ConnParams) (Conn, error) {
	cfg, err := cp.Config.WithDefaults()
	if err != nil {
		return nil, err
	}
	if len(cp.PrivateData) > MaxReqPrivateData {
		return nil, ErrPrivateDataTooLong
	}
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	ch, id, fd, err := newCMID()
	if err != nil {
		return nil, err
	}
	c := newRDMAConn(p, ch, id, fd)
	fail := func(err error) (Conn, error) {
		c.Close()
		return nil, err
	}
	var csrc *C.char
	srcPort := 0
	if cp.LocalAddr != "" {
		srcHost, sp, err := splitAddr(cp.LocalAddr)
		if err != nil {
			return fail(err)
		}
		csrc, srcPort = C.CString(srcHost), sp
		defer C.free(unsafe.Pointer(csrc))
	}
	chost := C.CString(host)
	rc := C.shim_resolve_addr(id, csrc, C.int(srcPort), chost, C.int(port), resolveTimeoutMS)
	C.free(unsafe.Pointer(chost))
	if rc != 0 {
		return fail(errnoErr("rdma_resolve_addr "+addr, rc))
	}
	if _, err := c.waitSetup(ctx, C.RDMA_CM_EVENT_ADDR_RESOLVED); err != nil {
		return fail(err)
	}
	if rc, err := C.rdma_resolve_route(id, resolveTimeoutMS); rc != 0 {
		return fail(fmt.Errorf("verbs: rdma_resolve_route: %w", err))
	}
	if _, err := c.waitSetup(ctx, C.RDMA_CM_EVENT_ROUTE_RESOLVED); err != nil {
		return fail(err)
	}
	if err := c.setupQP(cfg); err != nil {
		return fail(err)
	}
	if cp.Prepare != nil {
		if err := cp.Prepare(c); err != nil {
			return fail(err)
		}
	}
	rc = C.shim_connect(id, cBytes(cp.PrivateData), C.int(len(cp.PrivateData)),
		C.int(cp.InitiatorDepth), C.int(cp.ResponderResources),
		C.int(cp.RetryCount), C.int(cp.RNRRetryCount), 0)
	if rc != 0 {
		return fail(errnoErr("rdma_connect", rc))
	}
	ev, err := c.waitSetup(ctx, C.RDMA_CM_EVENT_ESTABLISHED)
	if err != nil {
		return fail(err)
	}
	var local, peer [C.SHIM_ADDR_MAX]C.char
	C.shim_id_addrs(id, &local[0], &peer[0])
	c.local, c.remote = C.GoString(&local[0]), C.GoString(&peer[0])
	c.peerPriv = ev.priv
	return c, nil
}

// setupQP creates the PD, completion channel, CQs and QP. One extra slot
// in each queue is kept for the drain markers.
func (c *rdmaConn) setupQP(cfg Config) (err error) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.destroyed {
		return ErrClosed
	}
	c.cfg = cfg
	verbs := c.id.verbs
	if verbs == nil {
		return errors.New("verbs: cm id has no device")
	}
	c.rxe = C.shim_is_rxe(verbs) != 0
	c.invMask = C.IBV_WC_WITH_INV
	if c.rxe {
		c.invMask |= 1 << 2
	}
	if c.pd, err = C.ibv_alloc_pd(verbs); c.pd == nil {
		return fmt.Errorf("verbs: ibv_alloc_pd: %w", err)
	}
	if c.compCh, err = C.ibv_create_comp_channel(verbs); c.compCh == nil {
		return fmt.Errorf("verbs: ibv_create_comp_channel: %w", err)
	}
	if c.ccFD, err = newPollFD(int(c.compCh.fd), "ibv-comp"); err != nil {
		return err
	}
	if c.scq, err = C.ibv_create_cq(verbs, C.int(cfg.SendCQDepth()+1), nil, c.compCh, 0); c.scq == nil {
		return fmt.Errorf("verbs: ibv_create_cq: %w", err)
	}
	if c.rcq, err = C.ibv_create_cq(verbs, C.int(cfg.RecvCQDepth()+1), nil, c.compCh, 0); c.rcq == nil {
		return fmt.Errorf("verbs: ibv_create_cq: %w", err)
	}
	if rc := C.shim_create_qp(c.id, c.pd, c.scq, c.rcq, C.int(cfg.MaxSendWR+1), C.int(cfg.MaxRecvWR+1),
		C.int(cfg.MaxSendSGE), C.int(cfg.MaxRecvSGE)); rc != 0 {
		return errnoErr("rdma_create_qp", rc)
	}
	c.qp = c.id.qp
	if cfg.AckTimeout != 0 {
		// Not fatal: a kernel without the option keeps the connection
		// manager's timeout, and the caller sees it in QueryQP.
		C.shim_set_ack_timeout(c.id, C.uint8_t(cfg.AckTimeout))
	}
	c.nSGE = C.SHIM_MAX_BATCH * max(cfg.MaxSendSGE, cfg.MaxRecvSGE)
	c.sendWRs = (*C.struct_shim_send_wr)(C.calloc(C.SHIM_MAX_BATCH, C.size_t(unsafe.Sizeof(C.struct_shim_send_wr{}))))
	c.recvWRs = (*C.struct_shim_recv_wr)(C.calloc(C.SHIM_MAX_BATCH, C.size_t(unsafe.Sizeof(C.struct_shim_recv_wr{}))))
	c.sges = (*C.struct_ibv_sge)(C.calloc(C.size_t(c.nSGE), C.size_t(unsafe.Sizeof(C.struct_ibv_sge{}))))
	c.wcs = (*C.struct_shim_wc)(C.calloc(C.SHIM_MAX_BATCH, C.size_t(unsafe.Sizeof(C.struct_shim_wc{}))))
	c.bad = (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))
	if err := c.prov.register(c); err != nil {
		return err
	}
	c.mu.Lock()
	dead := c.dead
	c.mu.Unlock()
	if dead { // the peer went away while we were setting up
		c.drainLocked()
	}
	return nil
}

func (c *rdmaConn) PeerPrivateData() []byte { return c.peerPriv }
func (c *rdmaConn) LocalAddr() string       { return c.local }
func (c *rdmaConn) RemoteAddr() string      { return c.remote }
func (c *rdmaConn) Config() Config          { return c.cfg }
func (c *rdmaConn) Done() <-chan struct{}   { return c.done }

func (c *rdmaConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// kill records the reason the connection died, disconnects (so the peer
// sees RDMA_CM_EVENT_DISCONNECTED) and moves the QP to the error state so
// that every outstanding WR is flushed.
//
// A flush completion polled while the connection was alive means the
// device moved the QP to the error state on its own (rxe does so on a
// responder-side error, e.g. the peer's bad rkey, without any async
// event). Such a flush is only a provisional reason: the first error
// completion with a real status polled afterwards replaces it.
func (c *rdmaConn) kill(reason error) {
	c.mu.Lock()
	if c.dead {
		if isFlushErr(c.err) && isWCErr(reason) && !isFlushErr(reason) {
			c.err = reason
		}
		c.mu.Unlock()
		return
	}
	c.dead, c.err = true, reason
	close(c.done)
	c.mu.Unlock()
	// Close may hold or wait for life; it then tears down itself.
	if !c.life.TryRLock() {
		return
	}
	defer c.life.RUnlock()
	if c.destroyed {
		return
	}
	C.rdma_disconnect(c.id)
	c.drainLocked()
	if c.cfg.LazySend {
		c.kickPoll() // a Poll waiting on the receive CQ alone arms the send CQ's drain
	}
}

func (c *rdmaConn) isDead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

func isWCErr(err error) bool {
	_, ok := err.(*WCError)
	return ok
}

func isFlushErr(err error) bool {
	e, ok := err.(*WCError)
	return ok && e.Status == WCWRFlushErr
}

// drainLocked moves the QP to error and posts the drain markers. Caller
// holds life for reading.
func (c *rdmaConn) drainLocked() {
	if c.qp == nil {
		return
	}
	failed := C.shim_to_error_and_drain(c.qp, C.uint64_t(drainRecvID), C.uint64_t(drainSendID))
	if failed&1 != 0 {
		c.drainedRecv.Store(true)
	}
	if failed&2 != 0 {
		c.drainedSend.Store(true)
	}
}

// Register implements Conn.
func (c *rdmaConn) Register(size int, access Access) (*MR, error) {
	if size <= 0 {
		return nil, ErrInvalidWR
	}
	c.life.RLock()
	defer c.life.RUnlock()
	if c.destroyed || c.pd == nil {
		return nil, ErrClosed
	}
	buf, err := allocMem(size)
	if err != nil {
		return nil, fmt.Errorf("verbs: mmap %d bytes: %w", size, err)
	}
	mr, err := C.shim_reg_mr(c.pd, unsafe.Pointer(&buf[0]), C.size_t(size), C.int(access))
	if mr == nil {
		freeMem(buf)
		if errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EPERM) {
			return nil, fmt.Errorf("verbs: ibv_reg_mr %d bytes: %w (check RLIMIT_MEMLOCK: ulimit -l, LimitMEMLOCK=)", size, err)
		}
		return nil, fmt.Errorf("verbs: ibv_reg_mr %d bytes: %w", size, err)
	}
	c.mu.Lock()
	c.nMR++
	c.mu.Unlock()
	c.prov.liveMRs.Add(1)
	return &MR{
		buf: buf, addr: uint64(uintptr(mr.addr)), lkey: uint32(mr.lkey), rkey: uint32(mr.rkey),
		access: access, owner: c, handle: unsafe.Pointer(mr),
	}, nil
}

// RegisterRange implements RangeRegistrar (ibv_reg_mr over the n bytes at
// off of m's memory).
func (c *rdmaConn) RegisterRange(m *MR, off, n int, access Access) (*MR, error) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.destroyed || c.pd == nil {
		return nil, ErrClosed
	}
	mr, err := C.shim_reg_mr(c.pd, unsafe.Pointer(&m.buf[off]), C.size_t(n), C.int(access))
	if mr == nil {
		return nil, fmt.Errorf("verbs: ibv_reg_mr %d bytes (range): %w", n, err)
	}
	c.mu.Lock()
	c.nMR++
	c.mu.Unlock()
	c.prov.liveMRs.Add(1)
	return &MR{
		buf: m.buf[off : off+n : off+n], addr: uint64(uintptr(mr.addr)), lkey: uint32(mr.lkey), rkey: uint32(mr.rkey),
		access: access, owner: c, handle: unsafe.Pointer(mr), parent: m,
	}, nil
}

func (c *rdmaConn) ReleaseMR(m *MR) error {
	var err error
	if rc := C.ibv_dereg_mr((*C.struct_ibv_mr)(m.handle)); rc != 0 {
		err = fmt.Errorf("verbs: ibv_dereg_mr: %w", syscall.Errno(rc))
	}
	if m.parent == nil {
		freeMem(m.buf)
	}
	m.buf = nil
	c.mu.Lock()
	c.nMR--
	last := c.destroyed && c.nMR == 0
	c.mu.Unlock()
	c.prov.liveMRs.Add(-1)
	if last {
		c.releaseDevice()
	}
	return err
}

// releaseDevice frees what ties the closed connection to its device once
// no MR is left: the protection domain, then the cm id (librdmacm's
// reference on the device's verbs context, which it closes with the last
// id of a removed device) and its event channel. Deregistering an MR
// after its context was closed would use freed memory, hence the order.
//
// An established connection whose disconnect the peer has not answered
// keeps its cm id a while longer (lingerForDisconnect): destroying the id
// cancels the CM's retransmissions of our DREQ, and a DREQ lost on a link
// that was down when the connection failed (the failure itself, often)
// would then never reach the peer, which keeps waiting on the dead
// connection until its own RPC timeout (60 s for the Linux client)
// instead of reconnecting as soon as the link is back.
func (c *rdmaConn) releaseDevice() {
	c.released.Do(func() {
		if c.pd != nil {
			C.ibv_dealloc_pd(c.pd)
			c.pd = nil
		}
		c.mu.Lock()
		linger := c.established && !c.peerGone
		c.mu.Unlock()
		if linger && c.prov.startLinger() {
			go c.lingerForDisconnect()
			return
		}
		c.destroyID()
	})
}

// destroyID destroys the cm id and its event channel.
func (c *rdmaConn) destroyID() {
	C.rdma_destroy_id(c.id)
	C.rdma_destroy_event_channel(c.ch)
	c.prov.liveIDs.Add(-1)
}

// MaxDisconnectLinger bounds how long a closed connection's cm id waits
// for the peer to answer its DREQ (lingerForDisconnect). The CM itself
// gives up sooner: 15 retries of its response timeout (about 4 s for the
// Linux client's requests), after which it reports DISCONNECTED.
const MaxDisconnectLinger = 90 * time.Second

// lingerForDisconnect keeps the closed connection's cm id, whose QP is
// already destroyed, until the CM reports the disconnect done
// (DISCONNECTED: the peer's DREP, or the CM's last DREQ retry timed out)
// or the device goes away, at most MaxDisconnectLinger or until the
// provider closes; then it destroys the id. Meanwhile the CM retransmits
// the DREQ. The id stays counted in Held: it still references the
// device's context.
func (c *rdmaConn) lingerForDisconnect() {
	defer c.prov.lingers.Done()
	removed := c.awaitDisconnect()
	c.destroyID()
	if removed != nil {
		// Once the id is gone, so that the removed device's context
		// can be released (forgetDevice waits for Held to reach 0).
		c.prov.deviceRemoved(removed)
	}
}

// awaitDisconnect reads the closed connection's CM events until the
// disconnect is done, the device is removed (it returns the device's
// context), MaxDisconnectLinger passes or the provider closes.
func (c *rdmaConn) awaitDisconnect() *C.struct_ibv_context {
	fd, err := newPollFD(int(c.ch.fd), "rdma-cm-linger")
	if err != nil {
		return nil
	}
	defer fd.close()
	ev := (*C.struct_shim_cm_event)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_shim_cm_event{}))))
	defer C.free(unsafe.Pointer(ev))
	fd.f.SetReadDeadline(time.Now().Add(MaxDisconnectLinger))
	stop := context.AfterFunc(c.prov.stopCtx, func() { fd.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		var rc C.int
		err := fd.read(func(uintptr) bool {
			rc = C.shim_get_cm_event(c.ch, ev)
			return rc != 0
		})
		if err != nil || rc < 0 {
			return nil
		}
		switch ev.event {
		case C.RDMA_CM_EVENT_DISCONNECTED, C.RDMA_CM_EVENT_TIMEWAIT_EXIT:
			return nil
		case C.RDMA_CM_EVENT_DEVICE_REMOVAL:
			return c.id.verbs
		}
	}
}

func postErr(rc C.int, posted int) error {
	err := error(syscall.Errno(rc))
	switch syscall.Errno(rc) {
	case syscall.ENOMEM:
		err = ErrQueueFull
	case syscall.EINVAL:
		err = fmt.Errorf("%w: %v", ErrInvalidWR, syscall.Errno(rc))
	}
	if posted == 0 {
		return err
	}
	return &PostError{Posted: posted, Err: err}
}

// PostSend implements Conn.
func (c *rdmaConn) PostSend(wrs []SendWR) error {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.destroyed {
		return ErrClosed
	}
	c.mu.Lock()
	est := c.established
	c.mu.Unlock()
	if !est {
		return ErrNotConnected
	}
	for i := range wrs {
		w := &wrs[i]
		if len(w.SGL) > c.cfg.MaxSendSGE || w.ID >= ReservedWRID {
			return ErrInvalidWR
		}
		switch w.Opcode {
		case OpSend, OpSendWithInv, OpRDMAWrite, OpRDMARead, OpLocalInv:
		case OpBindMW:
			if !validBind(&w.Bind) {
				return ErrInvalidWR
			}
		default:
			return ErrInvalidWR
		}
	}
	c.postMu.Lock()
	defer c.postMu.Unlock()
	cw := unsafe.Slice(c.sendWRs, C.SHIM_MAX_BATCH)
	sges := unsafe.Slice((*SGE)(unsafe.Pointer(c.sges)), c.nSGE)
	for posted := 0; posted < len(wrs); {
		n := min(len(wrs)-posted, C.SHIM_MAX_BATCH)
		off := 0
		for i := 0; i < n; i++ {
			w := &wrs[posted+i]
			x := &cw[i]
			x.wr_id = C.uint64_t(w.ID)
			x.remote_addr = C.uint64_t(w.RemoteAddr)
			x.rkey = C.uint32_t(w.RKey)
			x.inv_rkey = C.uint32_t(w.InvalidateRKey)
			x.opcode = C.uint32_t(w.Opcode)
			x.flags = 0
			if w.Signaled {
				x.flags = C.IBV_SEND_SIGNALED
			}
			x.num_sge = C.uint32_t(len(w.SGL))
			x.sge_off = C.uint32_t(off)
			x.mw, x.mr, x.bind_len, x.bind_access = nil, nil, 0, 0
			if w.Opcode == OpBindMW {
				fillBind(x, &w.Bind)
			}
			off += copy(sges[off:], w.SGL)
		}
		if rc := C.shim_post_send(c.qp, c.sendWRs, C.int(n), c.sges, c.bad); rc != 0 {
			return postErr(rc, posted+int(*c.bad))
		}
		posted += n
	}
	return nil
}

// PostRecv implements Conn.
func (c *rdmaConn) PostRecv(wrs []RecvWR) error {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.destroyed {
		return ErrClosed
	}
	for i := range wrs {
		if len(wrs[i].SGL) > c.cfg.MaxRecvSGE || wrs[i].ID >= ReservedWRID {
			return ErrInvalidWR
		}
	}
	c.postMu.Lock()
	defer c.postMu.Unlock()
	cw := unsafe.Slice(c.recvWRs, C.SHIM_MAX_BATCH)
	sges := unsafe.Slice((*SGE)(unsafe.Pointer(c.sges)), c.nSGE)
	for posted := 0; posted < len(wrs); {
		n := min(len(wrs)-posted, C.SHIM_MAX_BATCH)
		off := 0
		for i := 0; i < n; i++ {
			w := &wrs[posted+i]
			cw[i].wr_id = C.uint64_t(w.ID)
			cw[i].num_sge = C.uint32_t(len(w.SGL))
			cw[i].sge_off = C.uint32_t(off)
			off += copy(sges[off:], w.SGL)
		}
		if rc := C.shim_post_recv(c.qp, c.recvWRs, C.int(n), c.sges, c.bad); rc != 0 {
			return postErr(rc, posted+int(*c.bad))
		}
		posted += n
	}
	return nil
}

// pollLocked polls both CQs once. Caller holds life for reading.
func (c *rdmaConn) pollLocked(wcs []Completion) (int, error) {
	n := C.shim_poll(c.rcq, c.scq, c.wcs, C.int(min(len(wcs), C.SHIM_MAX_BATCH)), c.invMask)
	if n < 0 {
		err := errnoErr("ibv_poll_cq", n)
		c.kill(err)
		return 0, err
	}
	in := unsafe.Slice(c.wcs, C.SHIM_MAX_BATCH)[:n]
	out := 0
	for i := range in {
		w := &in[i]
		id := uint64(w.wr_id)
		switch id {
		case drainRecvID:
			c.drainedRecv.Store(true)
			continue
		case drainSendID:
			c.drainedSend.Store(true)
			continue
		}
		wc := &wcs[out]
		*wc = Completion{
			WRID:      id,
			Status:    WCStatus(w.status),
			Opcode:    WCOpcode(w.opcode),
			Recv:      w.flags&C.SHIM_WC_RECV != 0,
			ByteLen:   uint32(w.byte_len),
			VendorErr: uint32(w.vendor_err),
		}
		if w.flags&C.SHIM_WC_WITH_INV != 0 {
			wc.Invalidated, wc.InvalidatedRKey = true, uint32(w.inv_rkey)
		}
		// Any error completion, a flush included, means the QP is in
		// the error state: the connection is dead (see kill).
		if wc.Status != WCSuccess && (wc.Status != WCWRFlushErr || !c.isDead()) {
			c.kill(&WCError{Status: wc.Status, WRID: id, Recv: wc.Recv, VendorErr: wc.VendorErr})
		}
		out++
	}
	if out == 0 && c.drainedRecv.Load() && c.drainedSend.Load() {
		if err := c.Err(); err != nil {
			return 0, err
		}
	}
	return out, nil
}

// TryPoll implements Conn.
func (c *rdmaConn) TryPoll(wcs []Completion) (int, error) {
	if len(wcs) == 0 {
		return 0, nil
	}
	c.life.RLock()
	defer c.life.RUnlock()
	if c.destroyed {
		return 0, ErrClosed
	}
	return c.pollLocked(wcs)
}

// onCompChannel is the netpoller callback: it consumes one completion
// channel event, if any.
func (c *rdmaConn) onCompChannel(uintptr) bool { return C.shim_get_cq_event(c.compCh) != 0 }

// Poll implements Conn: poll, arm the CQs (ibv_req_notify_cq; the send
// CQ only when sendCQToArm says so), poll again, then wait for the
// completion channel through the netpoller.
func (c *rdmaConn) Poll(ctx context.Context, wcs []Completion) (int, error) {
	if len(wcs) == 0 {
		return 0, nil
	}
	c.life.RLock()
	defer c.life.RUnlock()
	if c.destroyed {
		return 0, ErrClosed
	}
	armed := false
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		n, err := c.pollLocked(wcs)
		if n > 0 || err != nil {
			return n, err
		}
		if !armed {
			if rc := C.shim_req_notify(c.rcq, c.sendCQToArm()); rc != 0 {
				return 0, errnoErr("ibv_req_notify_cq", rc)
			}
			armed = true
			continue
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if stop == nil && ctx.Done() != nil {
			f := c.ccFD.f
			stop = context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
		}
		err = c.ccFD.read(c.ccReadFn)
		armed = false
		c.recvOnly.Store(false)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.ccFD.f.SetReadDeadline(time.Time{})
				if ctx.Err() != nil {
					return 0, ctx.Err()
				}
				continue // a stale deadline from an earlier Poll
			}
			return 0, ErrClosed
		}
	}
}

// sendCQToArm is the send CQ when Poll is to wake for its completions:
// always without Config.LazySend, else while a WatchSend holds it or once
// the connection is dead (its drain marker completes there). Nil when
// not: Poll then waits with recvOnly set, which WatchSend reads after
// counting itself, so a watch that this load missed wakes the wait
// (kickPoll) and Poll arms again.
func (c *rdmaConn) sendCQToArm() *C.struct_ibv_cq {
	if !c.cfg.LazySend {
		return c.scq
	}
	c.recvOnly.Store(true)
	dead := false
	select {
	case <-c.done:
		dead = true
	default:
	}
	if c.sendWatch.Load() == 0 && !dead {
		return nil
	}
	c.recvOnly.Store(false)
	return c.scq
}

// WatchSend implements Conn.
func (c *rdmaConn) WatchSend() {
	if c.cfg.LazySend && c.sendWatch.Add(1) == 1 && c.recvOnly.Load() {
		c.kickPoll()
	}
}

// UnwatchSend implements Conn.
func (c *rdmaConn) UnwatchSend() {
	if c.cfg.LazySend {
		c.sendWatch.Add(-1)
	}
}

// kickPoll ends a Poll's wait for the completion channel: the read
// deadline in the past makes it return at once (now or at its next
// read); Poll clears it and arms again.
func (c *rdmaConn) kickPoll() {
	if c.ccFD != nil {
		c.ccFD.f.SetReadDeadline(time.Unix(1, 0))
	}
}

// Disconnect implements Conn (rdma_disconnect).
func (c *rdmaConn) Disconnect() error {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return ErrClosed
	}
	c.kill(ErrDisconnected)
	return nil
}

// Close implements Conn.
func (c *rdmaConn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	if !c.dead {
		c.dead, c.err = true, ErrClosed
		close(c.done)
	}
	c.mu.Unlock()
	// Wake the CM loop and any Poll; both then release life.
	c.cmFD.close()
	c.ccFD.close()
	<-c.cmDone
	c.prov.unregister(c)

	c.life.Lock()
	if c.qp != nil {
		C.rdma_disconnect(c.id)
		C.rdma_destroy_qp(c.id)
	}
	if c.scq != nil {
		C.ibv_destroy_cq(c.scq)
	}
	if c.rcq != nil {
		C.ibv_destroy_cq(c.rcq)
	}
	if c.compCh != nil {
		C.ibv_destroy_comp_channel(c.compCh)
	}
	for _, p := range []unsafe.Pointer{unsafe.Pointer(c.cmEv), unsafe.Pointer(c.sendWRs),
		unsafe.Pointer(c.recvWRs), unsafe.Pointer(c.sges), unsafe.Pointer(c.wcs), unsafe.Pointer(c.bad)} {
		C.free(p)
	}
	c.mu.Lock()
	c.destroyed = true
	last := c.nMR == 0
	c.mu.Unlock()
	c.life.Unlock()
	if last {
		c.releaseDevice()
	}
	return nil
}
