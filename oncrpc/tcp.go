package oncrpc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// tcpConn serves one TCP connection: one reader, a lazily grown pool of
// handler goroutines bounded by MaxInFlight, one writer. Replies leave in
// completion order, matched to calls by XID.
//
// Buffer ownership: each in-flight call owns one tcpSlot, taken from the
// free list by the reader before it reads the record and returned by the
// writer after the reply is written. The slot's record buffer backs
// call.Args, its head buffer backs the reply, and its payload buffer backs
// reply payloads; all are reused for the next call on the slot, so steady
// state allocates nothing. The bytes a slot's buffers take are charged to
// the connection and to the Limits' buffer budget (see budget.go); when
// the budget is exceeded, buffers are dropped as their slots come back
// and a connection over its share takes no new calls.
type tcpConn struct {
	srv  *Server
	c    net.Conn
	peer Peer
	log  *zap.Logger
	ctx  context.Context

	cancel  context.CancelFunc
	free    slotStack
	work    chan *tcpSlot
	out     chan *tcpSlot
	workers int

	stopOnce sync.Once
	stopped  chan struct{}

	// in buffers the socket so a small call costs one read(2), not two;
	// src is what it reads from, the socket with a note of whether the
	// last read(2) drained it.
	in  *bufio.Reader
	src drainReader
	// iov is the writer's reusable gather list for a batch of replies.
	iov  [][]byte
	bufs net.Buffers // consumed by WriteTo; a field so it does not escape
	// loneIOV and loneBufs are the reader's, for a lone call it answers
	// itself (serveLone).
	loneIOV  [][]byte
	loneBufs net.Buffers
	// writeFailed is set by whichever goroutine saw a write fail; replies
	// after it are not written.
	writeFailed atomic.Bool
	// raw is the socket's descriptor access for spliced payloads; nil
	// when the connection cannot take them (not a TCP socket).
	raw syscall.RawConn
	// sock is the socket's descriptor access for asking whether more
	// input waits (lone); nil when c is not a TCP socket.
	sock syscall.RawConn

	limits *Limits
	// held is the bytes this connection's slots hold, charged to
	// limits.bufUsed. Waiters for buffers sleep on wakeCh, closed and
	// replaced by broadcast when held falls; poller is set while one of
	// them also polls the budget (budget.go).
	held    atomic.Int64
	wakeMu  sync.Mutex
	wakeCh  chan struct{}
	waiters int
	poller  atomic.Bool
	// exempt is the one call allowed to grow its buffers past the
	// budget, so every connection can always finish a call.
	exempt atomic.Pointer[tcpSlot]

	// readActive and wroteActive are set by the reader for each record
	// and by the writer for each batch; the sweeper clears them.
	readActive, wroteActive atomic.Bool
	// lastSeen and swept belong to the sweeper.
	lastSeen time.Time
	swept    bool
}

// maxWriteBatch bounds how many ready replies the writer gathers into one
// writev (each reply takes up to five iovecs; Linux allows 1024).
const maxWriteBatch = 32

type tcpSlot struct {
	conn    *tcpConn
	charged int64 // bytes of record, head, tail and payload charged
	record  []byte
	call    Call
	reply   Reply
	payload []byte
	mark    [4]byte
	send    bool
	// pipes is where SpliceFile gets a pipe (nil: no splicing on this
	// connection); pipe is the one this call holds, if any.
	pipes *pipePool
	pipe  *spliceBuffer
}

// The tcpSlot is the call's Exchange: the record it read, the connection's
// peer, no limit on the reply below the record size, payloads in the
// slot's reusable buffer, splicing where the server allows it
// (splice_linux.go).

// Peer implements Exchange.
func (s *tcpSlot) Peer() *Peer { return &s.conn.peer }

// Message implements Exchange: the record read for this call.
func (s *tcpSlot) Message() []byte { return s.record }

// MaxReply implements Exchange: TCP replies are bounded by nothing below
// the record size.
func (s *tcpSlot) MaxReply() int { return 0 }

// AllocPayload implements Exchange with the slot's reusable buffer.
func (s *tcpSlot) AllocPayload(n int) []byte {
	if cap(s.payload) < n {
		s.conn.waitToGrow(s, int64(n-cap(s.payload)))
		s.payload = make([]byte, n)
	}
	return s.payload[:n]
}

func addrPort(a net.Addr) netip.AddrPort {
	switch v := a.(type) {
	case *net.TCPAddr:
		return v.AddrPort()
	case *net.UDPAddr:
		return v.AddrPort()
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap
	}
	return netip.AddrPort{}
}

func newTCPConn(s *Server, c net.Conn) *tcpConn {
	ctx, cancel := context.WithCancel(s.life.Context())
	tc := &tcpConn{
		srv: s, c: c, ctx: ctx, cancel: cancel,
		peer:     Peer{Transport: TCP, Local: addrPort(c.LocalAddr()), Remote: addrPort(c.RemoteAddr())},
		free:     newSlotStack(s.cfg.MaxInFlight),
		work:     make(chan *tcpSlot),
		out:      make(chan *tcpSlot, s.cfg.MaxInFlight),
		stopped:  make(chan struct{}),
		src:      drainReader{r: c},
		iov:      make([][]byte, 0, 5*maxWriteBatch),
		loneIOV:  make([][]byte, 0, 5),
		limits:   s.cfg.Limits,
		wakeCh:   make(chan struct{}),
		lastSeen: time.Now(),
	}
	tc.in = bufio.NewReaderSize(&tc.src, 64<<10)
	tc.log = s.log.With(zap.String("transport", "tcp"), zap.Stringer("remote", tc.peer.Remote))
	tc.sock = rawSocket(c)
	var pipes *pipePool
	if s.cfg.SpliceReads {
		if tc.raw = rawSocket(c); tc.raw != nil {
			pipes = s.splicePipes()
		}
	}
	for i := 0; i < s.cfg.MaxInFlight; i++ {
		slot := &tcpSlot{conn: tc, pipes: pipes}
		slot.reply = NewReply(nil)
		tc.free.put(slot)
	}
	return tc
}

// stopReading makes the reader stop after the record it is reading; calls
// in flight still complete and are answered.
func (tc *tcpConn) stopReading() {
	tc.stopOnce.Do(func() { close(tc.stopped) })
	tc.c.SetReadDeadline(time.Now())
}

func (tc *tcpConn) serve() {
	if ce := tc.log.Check(zap.DebugLevel, "connection open"); ce != nil {
		ce.Write()
	}
	writerDone := make(chan struct{})
	go func() {
		tc.writeLoop()
		close(writerDone)
	}()
	err := tc.readLoop()
	// Wait for every call in flight to come back to the free list.
	for i := 0; i < tc.free.size(); i++ {
		<-tc.free.avail
	}
	close(tc.work)
	close(tc.out)
	<-writerDone
	tc.cancel()
	tc.c.Close()
	tc.releaseAll()
	var tooLarge *RecordTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		tc.log.Warn("closing connection: oversized record", zap.Int64("claimed", tooLarge.Claimed), zap.Int("limit", tooLarge.Limit))
	case err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isStopped(tc.stopped):
		if ce := tc.log.Check(zap.DebugLevel, "connection closed"); ce != nil {
			ce.Write(zap.Error(err))
		}
	default:
		tc.log.Info("connection closed", zap.Error(err))
	}
}

func isStopped(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (tc *tcpConn) readLoop() error {
	for {
		var slot *tcpSlot
		select {
		case <-tc.free.avail:
			slot = tc.free.pop()
		case <-tc.stopped:
			return nil
		}
		if tc.limits.overBudget() && !tc.admitCall(slot) {
			tc.free.put(slot)
			return nil
		}
		rec, err := ReadRecord(tc.in, slot.record, tc.srv.cfg.MaxRecord)
		slot.record = rec
		if !tc.readActive.Load() {
			tc.readActive.Store(true)
		}
		tc.charge(slot)
		if err != nil {
			tc.free.put(slot)
			if isStopped(tc.stopped) {
				return nil
			}
			return err
		}
		if tc.lone(slot) {
			tc.serveLone(slot)
			continue
		}
		select {
		case tc.work <- slot:
		default:
			if tc.workers < tc.free.size() {
				tc.workers++
				go tc.worker()
			}
			tc.work <- slot
		}
	}
}

// lone reports whether the call just read into slot is one the reader
// should answer itself: its procedure is Quick, no other call is in
// flight (so the writer has nothing to write and no worker anything to
// run), and nothing of a further call has arrived behind it, neither in
// the read buffer nor in the socket. A client that sends one call at a
// time (ls -l, find, tar, most scripts) is then served by one goroutine,
// without the two hand-offs (reader to worker, worker to writer) that
// each wake a thread; calls that arrive while others run, or together,
// still go through the pool and the writer, which overlap reading,
// running and writing on several cores.
//
// "Nothing in the socket" is known without asking when the read(2) that
// brought the call's last bytes was short: the kernel copies everything
// queued up to the length asked for, so a short read left the queue
// empty, the same answer FIONREAD would give a moment later (both are a
// snapshot: what arrives after either waits for this call). Only a read
// that filled its buffer leaves the question to socketIdle, so a client
// calling one at a time costs one system call less per call (a syscall
// costs tens of microseconds in a TCG guest).
func (tc *tcpConn) lone(slot *tcpSlot) bool {
	return tc.callsInFlight() == 0 && tc.in.Buffered() == 0 && tc.srv.disp.Quick(slot.record) &&
		tc.sock != nil && (tc.src.drained || socketIdle(tc.sock))
}

// drainReader is the connection's socket as the read buffer sees it:
// drained records whether the last Read returned less than it was asked
// for without an error (the socket had nothing more queued then). Only
// the reader goroutine uses it.
type drainReader struct {
	r       io.Reader
	drained bool
}

func (d *drainReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.drained = err == nil && n < len(p)
	return n, err
}

// serveLone runs the call in slot and writes its reply on the reader
// goroutine. The writer is idle: every other slot is back on the free
// list, which the writer fills only after writing, and no call can
// start until this one is answered.
func (tc *tcpConn) serveLone(slot *tcpSlot) {
	slot.send = tc.srv.disp.Dispatch(tc.ctx, slot, &slot.call, &slot.reply)
	tc.charge(slot)
	tc.iovWrite(slot)
	if !tc.wroteActive.Load() {
		tc.wroteActive.Store(true)
	}
	tc.recycle(slot, tc.overShare())
}

// iovWrite writes the one reply in slot with the reader's own gather list.
func (tc *tcpConn) iovWrite(slot *tcpSlot) {
	if tc.writeFailed.Load() {
		return
	}
	iov, err := tc.gather(tc.loneIOV[:0], []*tcpSlot{slot})
	if err == nil && len(iov) > 0 {
		tc.loneBufs = iov
		_, err = tc.loneBufs.WriteTo(tc.c)
		clear(iov)
	}
	if err != nil {
		tc.failWrite(err)
	}
}

// failWrite closes the connection after a failed write; the replies of
// calls still running will not go out.
func (tc *tcpConn) failWrite(err error) {
	if tc.writeFailed.Swap(true) {
		return
	}
	tc.log.Info("write failed; closing", zap.Error(err))
	tc.c.Close()
	tc.cancel()
}

// recycle readies an answered slot for the next call and returns it to
// the free list; over drops its buffers (the connection is over its
// share of the budget).
func (tc *tcpConn) recycle(s *tcpSlot, over bool) {
	s.call = Call{}
	s.reply.Payload = nil
	s.releasePipe()
	if tc.releaseExempt(s) || over {
		tc.drop(s)
	}
	tc.free.put(s)
}

func (tc *tcpConn) worker() {
	for slot := range tc.work {
		slot.send = tc.srv.disp.Dispatch(tc.ctx, slot, &slot.call, &slot.reply)
		tc.charge(slot)
		tc.out <- slot
	}
}

func (tc *tcpConn) writeLoop() {
	batch := make([]*tcpSlot, 0, maxWriteBatch)
	for slot := range tc.out {
		// Gather the replies that are ready now into one writev.
		batch = append(batch[:0], slot)
	gather:
		for len(batch) < maxWriteBatch {
			select {
			case more, ok := <-tc.out:
				if !ok {
					break gather
				}
				batch = append(batch, more)
			default:
				break gather
			}
		}
		if !tc.writeFailed.Load() {
			if err := tc.writeReplies(batch); err != nil {
				tc.failWrite(err)
			}
		}
		if !tc.wroteActive.Load() {
			tc.wroteActive.Store(true)
		}
		over := tc.overShare()
		for _, s := range batch {
			tc.recycle(s, over)
		}
	}
}

// writeReplies writes each reply's record mark, head, payload, padding and
// tail, for every reply in batch, with a single gather write; a spliced
// payload splits it: what precedes it goes out with MSG_MORE, then the
// pipe is spliced into the socket.
func (tc *tcpConn) writeReplies(batch []*tcpSlot) error {
	iov, err := tc.gather(tc.iov[:0], batch)
	if err != nil || len(iov) == 0 {
		return err
	}
	tc.bufs = iov
	_, err = tc.bufs.WriteTo(tc.c)
	clear(iov) // drop references to the slots' buffers
	return err
}

// gather appends to iov each reply's record mark, head, payload, padding
// and tail, for every reply in batch, and returns what is left to write
// after any spliced payload (which it sends itself, with what precedes
// it).
func (tc *tcpConn) gather(iov [][]byte, batch []*tcpSlot) ([][]byte, error) {
	base := iov
	for i, slot := range batch {
		if !slot.send {
			continue
		}
		r := &slot.reply
		AppendRecordMark(slot.mark[:0], r.Len())
		iov = append(iov, slot.mark[:], r.Head)
		if r.spliced > 0 {
			pad := xdr.Padding(r.spliced)
			more := len(pad) > 0 || len(r.Tail) > 0 || anyToSend(batch[i+1:])
			err := tc.sendSpliced(iov, slot, more)
			clear(iov)
			if err != nil {
				return nil, err
			}
			iov = base[:0]
			if len(pad) > 0 {
				iov = append(iov, pad)
			}
		} else if len(r.Payload) > 0 {
			iov = append(iov, r.Payload)
			if pad := xdr.Padding(len(r.Payload)); len(pad) > 0 {
				iov = append(iov, pad)
			}
		}
		if len(r.Tail) > 0 {
			iov = append(iov, r.Tail)
		}
	}
	return iov, nil
}

func anyToSend(batch []*tcpSlot) bool {
	for _, s := range batch {
		if s.send {
			return true
		}
	}
	return false
}

// slotStack is the free list of call slots: last in, first out, so the
// slots (and their record and payload buffers) that were used last, and
// are warm in the cache, are used again first, and a connection with few
// calls in flight touches few buffers. avail holds one token per free
// slot and bounds the calls in flight.
type slotStack struct {
	mu    sync.Mutex
	slots []*tcpSlot
	avail chan struct{}
}

func newSlotStack(n int) slotStack {
	return slotStack{slots: make([]*tcpSlot, 0, n), avail: make(chan struct{}, n)}
}

func (s *slotStack) size() int { return cap(s.avail) }

// pop takes the most recently returned slot; the caller holds a token.
func (s *slotStack) pop() *tcpSlot {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.slots) - 1
	slot := s.slots[n]
	s.slots[n] = nil
	s.slots = s.slots[:n]
	return slot
}

func (s *slotStack) put(slot *tcpSlot) {
	s.mu.Lock()
	s.slots = append(s.slots, slot)
	s.mu.Unlock()
	s.avail <- struct{}{}
}
