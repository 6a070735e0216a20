package oncrpc

// client_sink_linux.go: the reader's splice of reply data into a sink's
// file. The pipe belongs to the Client's reader goroutine alone, is empty
// between calls of spliceToFile, and is closed (never reused) when a file
// write leaves bytes in it.

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// sinkPipeSize is the pipe size asked for: a 1 MiB READ in few splices. A
// smaller pipe (the default 64 KiB, when the user may not have more) only
// takes more of them.
const sinkPipeSize = 1 << 20

type sinkPipe struct{ r, w, size int }

func (p *sinkPipe) close() {
	unix.Close(p.r)
	unix.Close(p.w)
}

func newSinkPipe() (*sinkPipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	p := &sinkPipe{r: fds[0], w: fds[1]}
	size, err := unix.FcntlInt(uintptr(p.w), unix.F_SETPIPE_SZ, sinkPipeSize)
	if err != nil {
		size, err = unix.FcntlInt(uintptr(p.w), unix.F_GETPIPE_SZ, 0)
	}
	if err != nil || size <= 0 {
		p.close()
		return nil, os.NewSyscallError("fcntl F_GETPIPE_SZ", err)
	}
	p.size = size
	return p, nil
}

// closeSinkPipe closes the reader's pipe, if any.
func (c *Client) closeSinkPipe() {
	if c.pipe != nil {
		c.pipe.close()
		c.pipe = nil
	}
}

// spliceToFile moves n bytes from the socket into f at off: splice(2)
// socket -> pipe (no copy), pipe -> file (one copy). It returns how many
// bytes it consumed from the stream, a file write error (werr: the stream
// is in step, the bytes of the failed step are dropped) or a stream error
// (err). Without a socket or a pipe it copies through memory instead.
func (c *Client) spliceToFile(f *os.File, off int64, n int) (done int, werr, err error) {
	if c.raw == nil || c.noSplice {
		return c.copyToFile(f, off, n)
	}
	fc, ferr := f.SyscallConn()
	if ferr != nil {
		return c.copyToFile(f, off, n)
	}
	if c.pipe == nil {
		p, perr := newSinkPipe()
		if perr != nil {
			c.noSplice = true
			return c.copyToFile(f, off, n)
		}
		c.pipe = p
	}
	for done < n {
		var k int
		var serr error
		rerr := c.raw.Read(func(fd uintptr) bool {
			for {
				var k64 int64
				k64, serr = unix.Splice(int(fd), nil, c.pipe.w, nil, min(n-done, c.pipe.size), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				k = int(k64)
				if serr != unix.EINTR {
					return serr != unix.EAGAIN
				}
			}
		})
		switch {
		case rerr != nil:
			return done, nil, rerr
		case serr != nil:
			return done, nil, os.NewSyscallError("splice", serr)
		case k == 0:
			return done, nil, io.ErrUnexpectedEOF
		}
		left := k
		cerr := fc.Control(func(fd uintptr) {
			for left > 0 {
				o := off + int64(done+k-left)
				m, e := unix.Splice(c.pipe.r, nil, int(fd), &o, left, unix.SPLICE_F_MOVE)
				switch {
				case e == unix.EINTR:
					continue
				case e != nil:
					werr = os.NewSyscallError("splice", e)
					return
				case m == 0:
					werr = io.ErrShortWrite
					return
				}
				left -= int(m)
			}
		})
		if werr == nil {
			werr = cerr
		}
		done += k
		c.spliced.Add(int64(k))
		if werr != nil {
			// The bytes left in the pipe are gone from the stream.
			c.closeSinkPipe()
			return done, werr, nil
		}
	}
	return done, nil, nil
}
