//go:build linux && cgo && !nordma

package verbs

/*
#cgo LDFLAGS: -lrdmacm -libverbs
#include "rdma_shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/internal/threadcred"
)

// RDMASupported reports whether this build includes real RDMA support.
const RDMASupported = true

// The Go enum values must equal libibverbs'.
var (
	_ = [1]struct{}{}[int(C.IBV_WC_REM_ACCESS_ERR)-int(WCRemAccessErr)]
	_ = [1]struct{}{}[int(C.IBV_WC_RNR_RETRY_EXC_ERR)-int(WCRNRRetryExcErr)]
	_ = [1]struct{}{}[int(C.IBV_WC_TM_RNDV_INCOMPLETE)-int(WCTMRndvIncomplete)]
	_ = [1]struct{}{}[int(C.IBV_WC_RECV)-int(WCRecv)]
	_ = [1]struct{}{}[int(C.IBV_WC_RDMA_READ)-int(WCRDMARead)]
	_ = [1]struct{}{}[int(C.IBV_WR_SEND_WITH_INV)-int(OpSendWithInv)]
	_ = [1]struct{}{}[int(C.IBV_WR_RDMA_READ)-int(OpRDMARead)]
	_ = [1]struct{}{}[int(C.IBV_WR_SEND)-int(OpSend)]
	_ = [1]struct{}{}[int(C.IBV_ACCESS_REMOTE_READ)-int(AccessRemoteRead)]
	_ = [1]struct{}{}[int(C.IBV_EVENT_WQ_FATAL)-int(EventWQFatal)]
	_ = [1]struct{}{}[int(C.IBV_EVENT_QP_ACCESS_ERR)-int(EventQPAccessErr)]
	_ = [1]struct{}{}[int(unsafe.Sizeof(C.struct_ibv_sge{}))-int(unsafe.Sizeof(SGE{}))]
)

// Timeouts of rdma_resolve_addr and rdma_resolve_route.
const resolveTimeoutMS = 5000

// RDMAProvider is real RDMA over librdmacm and libibverbs. Completion,
// CM-event and async-event file descriptors are made non-blocking and
// waited on through Go's netpoller; no thread ever blocks in C.
//
// Device removal (RDMA_CM_EVENT_DEVICE_REMOVAL on a connection's or the
// listener's id): the connection dies with a *DeviceRemovedError, the
// listener's GetRequest returns one, the device's async-event watcher
// stops (its descriptor, a duplicate of the context's, is closed), and
// librdmacm is asked to re-read its device list (forgetDevice) so that it
// closes the device's verbs context once the last id on it is destroyed
// (or, when it was the only device, the context's descriptors are
// released in place: forgetDevice).
// A connection keeps its id until its last MR is deregistered and its
// protection domain freed, so nothing on the device outlives the context.
type RDMAProvider struct {
	mu         sync.Mutex
	closed     bool
	watchers   map[*C.struct_ibv_context]*asyncWatcher
	byQP       map[*C.struct_ibv_qp]*rdmaConn
	byCQ       map[*C.struct_ibv_cq]*rdmaConn
	forgetting map[*C.struct_ibv_context]bool
	forgets    sync.WaitGroup
	// stopCtx is done once Close began (stopCancel); lingers counts the
	// closed connections whose cm id waits for its disconnect to be
	// answered (rdmaConn.lingerForDisconnect), which Close ends and waits
	// for.
	stopCtx    context.Context
	stopCancel context.CancelFunc
	lingers    sync.WaitGroup

	// What this provider holds on its devices (Held): cm ids not yet
	// destroyed (listeners' and connections') and MRs and windows not
	// yet released.
	liveIDs, liveMRs atomic.Int64
}

// Held reports how many cm ids (listeners and connections, a closed
// connection's until its last MR goes) and memory registrations
// (MRs and windows) this provider still holds on its devices. After a
// device removal both must fall to what is on other devices: librdmacm
// closes the removed device's verbs context with its last id.
func (p *RDMAProvider) Held() (ids, mrs int64) { return p.liveIDs.Load(), p.liveMRs.Load() }

var _ Provider = (*RDMAProvider)(nil)

// NewRDMAProvider checks that libibverbs sees an RDMA device. It asks
// ibv_get_device_list, not rdma_get_devices, which would open every
// device and keep it open: a device held so, with no id of ours on it,
// could never be removed (nothing would tell us it is going).
//
// When there is a device, it fails if threads of this process have
// switched identity and gone back to running other goroutines
// (internal/threadcred: their credentials would fail the command files'
// check), and once it has succeeded no thread may do so.
func NewRDMAProvider() (*RDMAProvider, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		if errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENOSYS) || err == nil {
			return nil, ErrNoDevice
		}
		return nil, fmt.Errorf("verbs: ibv_get_device_list: %w", err)
	}
	C.ibv_free_device_list(list)
	if n == 0 {
		return nil, ErrNoDevice
	}
	if err := threadcred.Reserve(); err != nil {
		return nil, fmt.Errorf("verbs: %w", err)
	}
	p := &RDMAProvider{
		watchers: make(map[*C.struct_ibv_context]*asyncWatcher),
		byQP:     make(map[*C.struct_ibv_qp]*rdmaConn),
		byCQ:     make(map[*C.struct_ibv_cq]*rdmaConn),

		forgetting: make(map[*C.struct_ibv_context]bool),
	}
	p.stopCtx, p.stopCancel = context.WithCancel(context.Background())
	return p, nil
}

// startLinger counts one more lingering cm id unless the provider is
// closed (then the caller destroys the id at once).
func (p *RDMAProvider) startLinger() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.lingers.Add(1)
	return true
}

// Close stops the async-event watchers. Close Listeners and Conns first.
func (p *RDMAProvider) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.stopCancel()
	}
	p.closed = true
	ws := p.watchers
	p.watchers = make(map[*C.struct_ibv_context]*asyncWatcher)
	p.mu.Unlock()
	for _, w := range ws {
		w.fd.close()
		<-w.done
	}
	p.lingers.Wait()
	p.forgets.Wait()
	return nil
}

// deviceName is the name of the device id is on, "" when it is on none.
func deviceName(id *C.struct_rdma_cm_id) string {
	if id == nil || id.verbs == nil {
		return ""
	}
	return C.GoString(C.ibv_get_device_name(id.verbs.device))
}

// deviceRemoved is called when an id on ctx got
// RDMA_CM_EVENT_DEVICE_REMOVAL: it stops the device's async-event
// watcher and starts forgetDevice once per removed context.
func (p *RDMAProvider) deviceRemoved(ctx *C.struct_ibv_context) {
	if ctx == nil {
		return
	}
	p.mu.Lock()
	w := p.watchers[ctx]
	delete(p.watchers, ctx)
	start := !p.closed && !p.forgetting[ctx]
	if start {
		p.forgetting[ctx] = true
		p.forgets.Add(1)
	}
	p.mu.Unlock()
	if w != nil {
		w.fd.close()
		<-w.done
	}
	if start {
		go p.forgetDevice(ctx)
	}
}

// forgetDevice makes librdmacm drop the removed device ctx: it re-reads
// the device list only when asked (rdma_get_devices), and then closes the
// device's verbs context at once or, while ids still use it, when the
// last of them is destroyed. The kernel may still list the device for a
// moment after the removal event, so it asks every 100 ms, for at most a
// minute, until ctx is no longer among the devices.
//
// When the removed device was the only one, librdmacm never drops it:
// with no device listed at all it keeps its old list as it was (rdma-core
// 44 to current), so ctx stays open, and the kernel's removal of a device
// without disassociate_ucontext (rxe, siw) waits for the context's
// descriptors forever, and a new device on the same netdev cannot come.
// Then, once this provider holds no cm id (Held: listeners, connections
// with their PDs and MRs), the context's descriptors are released in
// place (shim_release_context); librdmacm closes the stand-ins when a
// device is listed again.
func (p *RDMAProvider) forgetDevice(ctx *C.struct_ibv_context) {
	defer p.forgets.Done()
	defer func() {
		p.mu.Lock()
		delete(p.forgetting, ctx)
		p.mu.Unlock()
	}()
	for range 600 {
		switch syncDevices(ctx) {
		case deviceGone:
			return
		case noDevices:
			if p.liveIDs.Load() == 0 {
				C.shim_release_context(ctx)
				return
			}
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-p.stopCtx.Done():
			return
		}
	}
}

// What syncDevices found.
const (
	deviceListed = iota // ctx is still among librdmacm's devices
	deviceGone          // librdmacm dropped it (closed, or closes with its last id)
	noDevices           // no device listed at all: librdmacm kept its old list
)

// syncDevices makes librdmacm re-read the device list (dropping removed
// devices, adding new ones) and reports whether ctx is still listed. It
// is called only once ctx's async-event watcher has stopped: librdmacm
// may close ctx while it runs. (rdma_get_devices also opens the devices
// still there, which stay open.)
func syncDevices(ctx *C.struct_ibv_context) int {
	var n C.int
	list := C.rdma_get_devices(&n)
	if list == nil {
		return noDevices
	}
	defer C.rdma_free_devices(list)
	for _, c := range unsafe.Slice(list, int(n)) {
		if c == ctx && ctx != nil {
			return deviceListed
		}
	}
	return deviceGone
}

// pollFD waits for readability of a C-owned descriptor through the
// netpoller. It polls a CLOEXEC duplicate, so closing it wakes waiters
// without closing the descriptor its C owner will close.
type pollFD struct {
	f  *os.File
	rc syscall.RawConn
}

func newPollFD(fd int, name string) (*pollFD, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("verbs: set %s non-blocking: %w", name, err)
	}
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("verbs: dup %s: %w", name, err)
	}
	f := os.NewFile(uintptr(nfd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &pollFD{f: f, rc: rc}, nil
}

// read calls fn whenever the descriptor may be readable until fn returns
// true; it fails once the pollFD is closed or its read deadline passes.
func (p *pollFD) read(fn func(uintptr) bool) error { return p.rc.Read(fn) }

func (p *pollFD) close() {
	if p != nil {
		p.f.Close()
	}
}

// errnoErr turns a negative errno returned by a shim into an error.
func errnoErr(what string, rc C.int) error {
	if rc < 0 {
		rc = -rc
	}
	return fmt.Errorf("verbs: %s: %w", what, syscall.Errno(rc))
}

// asyncWatcher reads a device's async events (ibv_get_async_event).
type asyncWatcher struct {
	ctx  *C.struct_ibv_context
	fd   *pollFD
	ev   *C.struct_shim_async
	done chan struct{}
}

// register maps c's QP and CQs for async-event dispatch and starts the
// device's watcher on first use.
func (p *RDMAProvider) register(c *rdmaConn) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	ctx := c.id.verbs
	if _, ok := p.watchers[ctx]; !ok {
		fd, err := newPollFD(int(ctx.async_fd), "ibv-async")
		if err != nil {
			return err
		}
		w := &asyncWatcher{ctx: ctx, fd: fd, done: make(chan struct{}),
			ev: (*C.struct_shim_async)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_shim_async{}))))}
		p.watchers[ctx] = w
		go p.watch(w)
	}
	p.byQP[c.qp] = c
	p.byCQ[c.scq] = c
	p.byCQ[c.rcq] = c
	return nil
}

func (p *RDMAProvider) unregister(c *rdmaConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.qp != nil {
		delete(p.byQP, c.qp)
	}
	delete(p.byCQ, c.scq)
	delete(p.byCQ, c.rcq)
}

func (p *RDMAProvider) watch(w *asyncWatcher) {
	defer close(w.done)
	defer C.free(unsafe.Pointer(w.ev))
	var rc C.int
	readFn := func(uintptr) bool {
		rc = C.shim_get_async(w.ctx, w.ev)
		return rc != 0
	}
	for {
		if err := w.fd.read(readFn); err != nil {
			return
		}
		if rc < 0 {
			continue
		}
		ev := AsyncEvent(w.ev._type)
		var victims []*rdmaConn
		p.mu.Lock()
		switch ev {
		case EventQPFatal, EventQPReqErr, EventQPAccessErr:
			if c := p.byQP[w.ev.qp]; c != nil {
				victims = append(victims, c)
			}
		case EventCQErr:
			if c := p.byCQ[w.ev.cq]; c != nil {
				victims = append(victims, c)
			}
		case EventDeviceFatal:
			for _, c := range p.byQP {
				if c.id.verbs == w.ctx {
					victims = append(victims, c)
				}
			}
		}
		p.mu.Unlock()
		for _, c := range victims {
			c.kill(&AsyncEventError{Event: ev})
		}
	}
}

func splitAddr(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("verbs: address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("verbs: address %q: bad port", addr)
	}
	return host, port, nil
}

// newCMID creates an event channel and an RDMA_PS_TCP id on it.
func newCMID() (*C.struct_rdma_event_channel, *C.struct_rdma_cm_id, *pollFD, error) {
	ch, err := C.rdma_create_event_channel()
	if ch == nil {
		return nil, nil, nil, fmt.Errorf("verbs: rdma_create_event_channel: %w", err)
	}
	var id *C.struct_rdma_cm_id
	if rc, err := C.rdma_create_id(ch, &id, nil, C.RDMA_PS_TCP); rc != 0 {
		C.rdma_destroy_event_channel(ch)
		return nil, nil, nil, fmt.Errorf("verbs: rdma_create_id: %w", err)
	}
	fd, err := newPollFD(int(ch.fd), "rdma-cm")
	if err != nil {
		C.rdma_destroy_id(id)
		C.rdma_destroy_event_channel(ch)
		return nil, nil, nil, err
	}
	return ch, id, fd, nil
}

// Listen implements Provider: rdma_bind_addr and rdma_listen on addr
// ("ip:port"; an empty host listens on all IPv4 addresses).
func (p *RDMAProvider) Listen(addr string) (Listener, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	ch, id, fd, err := newCMID()
	if err != nil {
		return nil, err
	}
	chost := C.CString(host)
	rc := C.shim_bind_listen(id, chost, C.int(port), 128)
	C.free(unsafe.Pointer(chost))
	if rc != 0 {
		fd.close()
		C.rdma_destroy_id(id)
		C.rdma_destroy_event_channel(ch)
		return nil, errnoErr("rdma_bind_addr/rdma_listen "+addr, rc)
	}
	var local, peer [C.SHIM_ADDR_MAX]C.char
	C.shim_id_addrs(id, &local[0], &peer[0])
	ln := &rdmaListener{
		prov: p, ch: ch, id: id, fd: fd,
		addr:    C.GoString(&local[0]),
		reqs:    make(chan *rdmaRequest, 128),
		closed:  make(chan struct{}),
		removed: make(chan struct{}),
		done:    make(chan struct{}),
		ev:      (*C.struct_shim_cm_event)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_shim_cm_event{})))),
	}
	p.liveIDs.Add(1)
	go ln.loop()
	return ln, nil
}

// rdmaListener implements Listener. Its goroutine reads the listening
// id's event channel; each CONNECT_REQUEST's new id is migrated to its own
// channel (rdma_migrate_id) owned by the request's rdmaConn. A
// DEVICE_REMOVAL on the listening id closes removed: GetRequest then
// returns removedErr.
type rdmaListener struct {
	prov   *RDMAProvider
	ch     *C.struct_rdma_event_channel
	id     *C.struct_rdma_cm_id
	fd     *pollFD
	addr   string
	ev     *C.struct_shim_cm_event
	reqs   chan *rdmaRequest
	mu     sync.Mutex
	closed chan struct{}
	isShut bool
	done   chan struct{}

	removed    chan struct{}
	removedErr error
}

func (ln *rdmaListener) loop() {
	defer close(ln.done)
	var rc C.int
	readFn := func(uintptr) bool {
		rc = C.shim_get_cm_event(ln.ch, ln.ev)
		return rc != 0
	}
	for {
		if err := ln.fd.read(readFn); err != nil {
			return
		}
		if rc < 0 {
			continue
		}
		if ln.ev.event == C.RDMA_CM_EVENT_DEVICE_REMOVAL {
			ln.deviceRemoved()
			continue
		}
		if ln.ev.event != C.RDMA_CM_EVENT_CONNECT_REQUEST {
			continue
		}
		ev := goCMEvent(ln.ev)
		r, err := ln.newRequest(ev)
		if err != nil {
			C.rdma_reject(ev.id, nil, 0)
			C.rdma_destroy_id(ev.id)
			continue
		}
		ln.mu.Lock()
		queued := false
		if !ln.isShut {
			select {
			case ln.reqs <- r:
				queued = true
			default:
			}
		}
		ln.mu.Unlock()
		if !queued {
			r.Reject(nil)
		}
	}
}

// deviceRemoved ends the listener: GetRequest reports the removal, and
// requests not yet taken are rejected.
func (ln *rdmaListener) deviceRemoved() {
	ln.mu.Lock()
	if ln.removedErr != nil {
		ln.mu.Unlock()
		return
	}
	ln.removedErr = &DeviceRemovedError{Device: deviceName(ln.id)}
	close(ln.removed)
	ln.mu.Unlock()
	ln.prov.deviceRemoved(ln.id.verbs)
	for {
		select {
		case r := <-ln.reqs:
			r.Reject(nil)
		default:
			return
		}
	}
}

func (ln *rdmaListener) newRequest(ev cmEvent) (*rdmaRequest, error) {
	ch, err := C.rdma_create_event_channel()
	if ch == nil {
		return nil, fmt.Errorf("verbs: rdma_create_event_channel: %w", err)
	}
	if rc, err := C.rdma_migrate_id(ev.id, ch); rc != 0 {
		C.rdma_destroy_event_channel(ch)
		return nil, fmt.Errorf("verbs: rdma_migrate_id: %w", err)
	}
	fd, err := newPollFD(int(ch.fd), "rdma-cm")
	if err != nil {
		// The id is on ch now; destroy it before the channel.
		C.rdma_destroy_id(ev.id)
		C.rdma_destroy_event_channel(ch)
		return nil, err
	}
	c := newRDMAConn(ln.prov, ch, ev.id, fd)
	c.local, c.remote = ev.local, ev.peer
	c.peerPriv = ev.priv
	return &rdmaRequest{c: c, ev: ev}, nil
}

func (ln *rdmaListener) GetRequest(ctx context.Context) (ConnRequest, error) {
	select {
	case r := <-ln.reqs:
		return r, nil
	case <-ln.closed:
		return nil, ErrClosed
	case <-ln.removed:
		ln.mu.Lock()
		defer ln.mu.Unlock()
		return nil, ln.removedErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (ln *rdmaListener) Addr() string { return ln.addr }

func (ln *rdmaListener) Close() error {
	ln.mu.Lock()
	if ln.isShut {
		ln.mu.Unlock()
		return nil
	}
	ln.isShut = true
	close(ln.closed)
	ln.mu.Unlock()
	ln.fd.close()
	<-ln.done
	C.rdma_destroy_id(ln.id)
	ln.prov.liveIDs.Add(-1)
	C.rdma_destroy_event_channel(ln.ch)
	C.free(unsafe.Pointer(ln.ev))
	for {
		select {
		case r := <-ln.reqs:
			r.Reject(nil)
		default:
			return nil
		}
	}
}

// cmEvent is the Go copy of a shim_cm_event.
type cmEvent struct {
	event  C.int
	status int
	id     *C.struct_rdma_cm_id
	priv   []byte
	// peerIRD and peerORD are, for a connection request, the peer's
	// initiator depth (RDMA Reads it will issue to us at a time) and
	// responder resources (RDMA Reads from us it will serve at a time).
	// rdma_cm reports them from the receiver's side: its
	// param.conn.initiator_depth is how many Reads the receiver may have
	// outstanding at the peer, that is the peer's responder resources
	// (the kernel's cm_format_req_event swaps the REQ's fields).
	peerIRD, peerORD uint8
	local            string
	peer             string
}

func goCMEvent(e *C.struct_shim_cm_event) cmEvent {
	ev := cmEvent{
		event:   e.event,
		status:  int(e.status),
		id:      e.id,
		peerIRD: uint8(e.responder_resources),
		peerORD: uint8(e.initiator_depth),
		local:   C.GoString(&e.local[0]),
		peer:    C.GoString(&e.peer[0]),
	}
	if e.priv_len > 0 {
		ev.priv = C.GoBytes(unsafe.Pointer(&e.priv[0]), e.priv_len)
	}
	return ev
}

// rdmaRequest implements ConnRequest.
type rdmaRequest struct {
	c        *rdmaConn
	ev       cmEvent
	mu       sync.Mutex
	hasQP    bool
	answered bool
}

func (r *rdmaRequest) PrivateData() []byte       { return r.ev.priv }
func (r *rdmaRequest) RemoteAddr() string        { return r.ev.peer }
func (r *rdmaRequest) LocalAddr() string         { return r.ev.local }
func (r *rdmaRequest) InitiatorDepth() uint8     { return r.ev.peerIRD }
func (r *rdmaRequest) ResponderResources() uint8 { return r.ev.peerORD }

func (r *rdmaRequest) Conn(cfg Config) (Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hasQP {
		return nil, errors.New("verbs: ConnRequest.Conn called twice")
	}
	if r.answered {
		return nil, ErrNotConnected
	}
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if err := r.c.setupQP(cfg); err != nil {
		return nil, err
	}
	r.hasQP = true
	return r.c, nil
}

func (r *rdmaRequest) Accept(privateData []byte, initiatorDepth, responderResources uint8) error {
	if len(privateData) > MaxRepPrivateData {
		return ErrPrivateDataTooLong
	}
	r.mu.Lock()
	if !r.hasQP {
		r.mu.Unlock()
		return errors.New("verbs: Accept before ConnRequest.Conn")
	}
	if r.answered {
		r.mu.Unlock()
		return errors.New("verbs: connection request already answered")
	}
	r.answered = true
	r.mu.Unlock()
	c := r.c
	// The device bounds both depths; rdma_accept fails above them.
	var maxInit, maxResp C.int
	if C.shim_rd_atom_limits(c.id.verbs, &maxInit, &maxResp) == 0 {
		initiatorDepth = uint8(min(int(initiatorDepth), int(maxInit)))
		responderResources = uint8(min(int(responderResources), int(maxResp)))
	}
	// rnr_retry_count 7 (infinite) for the peer's Sends to us: we always
	// keep Receives posted; retry_count is ignored when accepting.
	rc := C.shim_connect(c.id, cBytes(privateData), C.int(len(privateData)),
		C.int(initiatorDepth), C.int(responderResources), 7, 7, 1)
	if rc != 0 {
		err := errnoErr("rdma_accept", rc)
		c.kill(err)
		return err
	}
	if _, err := c.waitSetup(context.Background(), C.RDMA_CM_EVENT_ESTABLISHED); err != nil {
		return err
	}
	return nil
}

func (r *rdmaRequest) Reject(privateData []byte) error {
	if len(privateData) > MaxRejPrivateData {
		return ErrPrivateDataTooLong
	}
	r.mu.Lock()
	if r.answered {
		r.mu.Unlock()
		return errors.New("verbs: connection request already answered")
	}
	r.answered = true
	r.mu.Unlock()
	var err error
	if rc, e := C.rdma_reject(r.c.id, cBytes(privateData), C.uint8_t(len(privateData))); rc != 0 {
		err = fmt.Errorf("verbs: rdma_reject: %w", e)
	}
	r.c.Close()
	return err
}

// cBytes returns a pointer to b's first byte, or nil. The C side copies
// the bytes before returning.
func cBytes(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
