package oncrpc

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Zero-copy READ payloads over TCP. A handler's Reply.SpliceFile moves the
// file's page-cache pages into a pipe owned by the call's slot with
// splice(2) (the pages are referenced, not copied); the writer then sends
// the reply's mark and head with MSG_MORE and splices the pipe into the
// socket. The data never passes through user memory.
//
// Pipe ownership: a pipe belongs to the server's pipePool while free, to a
// tcpSlot from its first SpliceFile until the writer has sent the reply,
// then goes back to the pool when it is empty. A pipe that still holds
// bytes (the reply was not sent, or the send failed part way) is closed,
// never reused, so stale data cannot leak into another reply.

// pipeCapacity is the pipe size asked for: a 1 MiB READ at an unaligned
// offset spans 257 pages, and F_SETPIPE_SZ rounds up to a power of two.
const pipeCapacity = 2 << 20

// minPipeCapacity is the smallest pipe worth splicing through; a server
// not allowed larger pipes (an unprivileged user above
// /proc/sys/fs/pipe-max-size) copies instead.
const minPipeCapacity = 1 << 20

type spliceBuffer struct {
	r, w int
	size int // capacity in bytes
	used int // bytes spliced in and not yet sent
}

func (p *spliceBuffer) close() {
	unix.Close(p.r)
	unix.Close(p.w)
}

// pipePool keeps free pipes for spliced payloads. It holds at most cap(free)
// pipes; more are closed when returned.
type pipePool struct {
	free   chan *spliceBuffer
	closed atomic.Bool // after server shutdown: returned pipes are closed
	// disabled is set when pipes of minPipeCapacity cannot be had; the
	// server copies from then on.
	disabled atomic.Bool
	log      *zap.Logger
}

func newPipePool(n int, log *zap.Logger) *pipePool {
	return &pipePool{free: make(chan *spliceBuffer, n), log: log}
}

func (pp *pipePool) get() (*spliceBuffer, error) {
	select {
	case p := <-pp.free:
		return p, nil
	default:
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, fmt.Errorf("pipe2: %w", err)
	}
	p := &spliceBuffer{r: fds[0], w: fds[1]}
	size, err := unix.FcntlInt(uintptr(p.w), unix.F_SETPIPE_SZ, pipeCapacity)
	if err != nil {
		size, err = unix.FcntlInt(uintptr(p.w), unix.F_SETPIPE_SZ, minPipeCapacity)
	}
	if err != nil || size < minPipeCapacity {
		p.close()
		if !pp.disabled.Swap(true) {
			pp.log.Warn("READ payloads will be copied, not spliced: cannot size a pipe (raise /proc/sys/fs/pipe-max-size or run with CAP_SYS_RESOURCE)",
				zap.Int("want", minPipeCapacity), zap.Int("got", size), zap.Error(err))
		}
		return nil, fmt.Errorf("%w: F_SETPIPE_SZ %d: %v", ErrNoSplice, minPipeCapacity, err)
	}
	p.size = size
	return p, nil
}

func (pp *pipePool) put(p *spliceBuffer) {
	if p.used != 0 || pp.closed.Load() {
		p.close()
		return
	}
	select {
	case pp.free <- p:
	default:
		p.close()
	}
}

// closeAll closes the free pipes (at server shutdown).
func (pp *pipePool) closeAll() {
	pp.closed.Store(true)
	for {
		select {
		case p := <-pp.free:
			p.close()
		default:
			return
		}
	}
}

// CanSplice implements Exchange.
func (s *tcpSlot) CanSplice() bool {
	return s.pipes != nil && !s.pipes.disabled.Load()
}

// SpliceFile implements Exchange: it moves up to n bytes of fd at off
// into the slot's pipe.
func (s *tcpSlot) SpliceFile(fd int, off int64, n int) (int, error) {
	if s.pipes == nil {
		return 0, ErrNoSplice
	}
	if s.pipe == nil {
		p, err := s.pipes.get()
		if err != nil {
			return 0, err
		}
		s.pipe = p
	}
	if s.pipe.used != 0 {
		// Left over from an abandoned splice in this call: start clean.
		s.pipes.put(s.pipe)
		s.pipe = nil
		return s.SpliceFile(fd, off, n)
	}
	n = min(n, s.pipe.size)
	got := 0
	for got < n {
		m, err := unix.Splice(fd, &off, s.pipe.w, nil, n-got, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN && got > 0:
			// The pipe is full (an unaligned read needs one page more
			// than its bytes): a short read, which NFS allows.
		case err != nil:
			s.pipe.used += got
			return 0, fmt.Errorf("splice from file: %w", err)
		}
		if m <= 0 {
			break
		}
		got += int(m)
	}
	s.pipe.used += got
	return got, nil
}

// releasePipe gives the slot's pipe back to the pool (closed if it still
// holds bytes).
func (s *tcpSlot) releasePipe() {
	if s.pipe != nil {
		s.pipes.put(s.pipe)
		s.pipe = nil
	}
}

// rawSocket returns the raw descriptor access for c when the writer can
// splice into it (a TCP socket), or nil.
func rawSocket(c net.Conn) syscall.RawConn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// sendSpliced writes iov (the replies gathered so far, ending with the
// spliced reply's mark and head) with MSG_MORE, then moves the slot's
// pipe into the socket. more says whether anything follows (padding, a
// tail, further replies), so the last segment is not held back.
func (tc *tcpConn) sendSpliced(iov [][]byte, slot *tcpSlot, more bool) error {
	p := slot.pipe
	if p == nil || p.used < slot.reply.spliced {
		return errors.New("oncrpc: spliced payload missing from its pipe")
	}
	left := slot.reply.spliced
	var opErr error
	err := tc.raw.Write(func(fd uintptr) bool {
		for len(iov) > 0 {
			n, err := unix.SendmsgBuffers(int(fd), iov, nil, nil, unix.MSG_MORE|unix.MSG_NOSIGNAL)
			if err == unix.EINTR {
				continue
			}
			if err == unix.EAGAIN {
				return false
			}
			if err != nil {
				opErr = fmt.Errorf("sendmsg: %w", err)
				return true
			}
			iov = consumeIovec(iov, n)
		}
		for left > 0 {
			flags := unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK
			if more {
				flags |= unix.SPLICE_F_MORE
			}
			n, err := unix.Splice(p.r, nil, int(fd), nil, left, flags)
			if err == unix.EINTR {
				continue
			}
			if err == unix.EAGAIN {
				return false
			}
			if err != nil {
				opErr = fmt.Errorf("splice to socket: %w", err)
				return true
			}
			if n == 0 {
				opErr = errors.New("splice to socket: pipe drained early")
				return true
			}
			left -= int(n)
			p.used -= int(n)
		}
		return true
	})
	if err != nil {
		return err
	}
	return opErr
}

// consumeIovec drops the first n bytes of iov.
func consumeIovec(iov [][]byte, n int) [][]byte {
	for len(iov) > 0 && n >= len(iov[0]) {
		n -= len(iov[0])
		iov = iov[1:]
	}
	if len(iov) > 0 {
		iov[0] = iov[0][n:]
	}
	return iov
}
