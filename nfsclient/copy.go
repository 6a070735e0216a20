package nfsclient

// copy.go: whole-file copies between a File and local memory that is
// addressed by offset (an *os.File is both io.ReaderAt and io.WriterAt).
// Unlike WriteTo and ReadFrom, which hand every block through one
// goroutine in order, each of Config.Depth workers here owns one buffer
// for the whole copy and moves its block between the wire and the local
// side itself: the data is still in that CPU's cache when it is copied
// again, no block waits for the one before it, and no buffer is kept for
// a re-send (the source is read again instead). Over TCP a local file
// source is mapped (mmap_linux.go), so its bytes reach the socket with
// one copy, the kernel's.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// WriteToAt copies the file from its current offset to its end into w:
// the block at file offset start+i goes to w.WriteAt(block, off+i), from
// the worker whose READ returned it, in whatever order the READs
// complete (up to Config.Depth in flight). When w is an *os.File, the
// data goes into it at those offsets without passing through a buffer
// where the transport can do that (TCP: see oncrpc.ReplySink), with
// pwrite(2) otherwise. It returns the bytes copied;
// on an error it returns the length of the prefix known to be complete
// (blocks past it may have been written too). The File's offset moves to
// the end of what was copied.
func (fl *File) WriteToAt(w io.WriterAt, off int64) (int64, error) {
	if err := fl.checkOpen("read"); err != nil {
		return 0, err
	}
	if fl.dir {
		return 0, pathErr("read", fl.name, statusErr(wire.ProcRead, wire.ErrIsDir))
	}
	if err := fl.flushPending(); err != nil {
		return 0, err
	}
	fl.mu.Lock()
	start := fl.off
	fl.mu.Unlock()
	bs := int64(fl.fs.rsize)
	// A local file takes the READ data straight from the transport
	// (readBlockToFile); other writers get it through the reply buffer.
	dst, _ := w.(*os.File)
	var (
		next atomic.Int64 // the next block's file offset
		mu   sync.Mutex
		end  = int64(-1) // file offset where the data ended (eof), -1 unknown
		bad  = int64(-1) // file offset of the first failed block, -1 none
		ferr error
		wg   sync.WaitGroup
	)
	next.Store(start)
	stopped := func(at int64) bool {
		mu.Lock()
		defer mu.Unlock()
		return (end >= 0 && at >= end) || (bad >= 0 && at >= bad)
	}
	fail := func(at int64, err error) {
		mu.Lock()
		if bad < 0 || at < bad {
			bad, ferr = at, err
		}
		mu.Unlock()
	}
	// No more workers than the file has blocks (by its size at open;
	// a file that grew is still read to its end, by fewer workers).
	for range workers(fl.fs.cfg.Depth, fl.size()-start, bs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bp := fl.fs.readBuf()
			defer fl.fs.readBufs.Put(bp)
			buf := *bp
			for {
				at := next.Add(bs) - bs
				if stopped(at) {
					return
				}
				var got int
				var eof bool
				if dst != nil {
					var err error
					if got, eof, err = fl.readBlockToFile(dst, buf, at, off+at-start, int(bs)); err != nil {
						fail(at, err)
						return
					}
				} else {
					data, e, err := fl.readBlock(buf, at, int(bs))
					if err != nil {
						fail(at, err)
						return
					}
					if len(data) > 0 {
						if _, err := w.WriteAt(data, off+at-start); err != nil {
							fail(at, err)
							return
						}
					}
					got, eof = len(data), e
				}
				if eof || int64(got) < bs {
					mu.Lock()
					if e := at + int64(got); end < 0 || e < end {
						end = e
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	total := end - start
	var err error
	if bad >= 0 && (end < 0 || bad < end) {
		total, err = bad-start, ferr
	}
	fl.mu.Lock()
	fl.off = start + total
	fl.mu.Unlock()
	return total, err
}

// ReadFromAt writes r's bytes from offset roff to r's end (n < 0) or n
// bytes of them (n >= 0) into the file at its current offset, with up to
// Config.Depth UNSTABLE WRITEs in flight, each block read with r.ReadAt
// by the worker that sends it. It COMMITs before it returns, so it keeps
// no copy of the data: should the COMMIT show that the server lost
// uncommitted WRITEs (its write verifier changed), the blocks are read
// from r again and re-sent. r must therefore hold the same bytes until
// ReadFromAt returns. It returns the bytes written; on an error, the
// length of the prefix known to be written (blocks past it may have been
// written too), and that data is not committed.
func (fl *File) ReadFromAt(r io.ReaderAt, roff, n int64) (int64, error) {
	start, err := fl.startWrite()
	if err != nil {
		return 0, err
	}
	total, err := fl.sendFrom(r, roff, n, start)
	if err != nil {
		fl.forgetSource(r)
		return total, err
	}
	fl.mu.Lock()
	fl.off = start + total
	if e := uint64(fl.off); e > fl.attr.Size {
		fl.attr.Size = e
	}
	fl.mu.Unlock()
	if err := fl.commit(); err != nil {
		fl.forgetSource(r)
		return total, err
	}
	return total, nil
}

// sendFrom WRITEs r's bytes [roff, roff+n) (to r's end when n < 0) at
// file offset off, recording each block as an extent that refers to r.
// It returns the bytes sent: up to r's end, or up to the first failed
// block.
func (fl *File) sendFrom(r io.ReaderAt, roff, n, off int64) (int64, error) {
	orig, origOff := r, roff
	if m, ok := fl.mapSource(r, roff, n); ok {
		defer m.unmap()
		r, roff, n = m, 0, int64(len(m.b))
	}
	bs := int64(fl.fs.wsize)
	limit := int64(-1) // relative end of the source, -1 unknown; under mu
	if n >= 0 {
		limit = n
	}
	var (
		next atomic.Int64 // the next block's position relative to roff
		mu   sync.Mutex
		bad  = int64(-1)
		ferr error
		wg   sync.WaitGroup
	)
	stopped := func(at int64) bool {
		mu.Lock()
		defer mu.Unlock()
		return (limit >= 0 && at >= limit) || (bad >= 0 && at >= bad)
	}
	fail := func(at int64, err error) {
		mu.Lock()
		if bad < 0 || at < bad {
			bad, ferr = at, err
		}
		mu.Unlock()
	}
	nw := fl.fs.cfg.Depth
	if n >= 0 {
		nw = workers(nw, n, bs)
	}
	for range nw {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte // a pooled wsize buffer, unless the source is mapped
			if _, ok := r.(*mapped); !ok {
				buf = fl.fs.writeBuf()
				defer fl.fs.putWriteBuf(buf)
			}
			for {
				at := next.Add(bs) - bs
				if stopped(at) {
					return
				}
				want := bs
				if n >= 0 {
					want = min(bs, n-at)
				}
				var k int
				var rerr error
				var block []byte
				if m, ok := r.(*mapped); ok {
					// The kernel copies straight from the page cache
					// into the socket.
					block = m.b[at : at+want]
					k = len(block)
				} else {
					block = buf[:want]
					k, rerr = r.ReadAt(block, roff+at)
				}
				if rerr != nil && !(errors.Is(rerr, io.EOF) && int64(k) < want) {
					fail(at, rerr)
					return
				}
				if k > 0 {
					if err := fl.send(block[:k], off+at); err != nil {
						fail(at, err)
						return
					}
					fl.keep(extent{off: off + at, src: orig, srcOff: origOff + at, n: k})
				}
				if int64(k) < want {
					// r ended here.
					if n >= 0 {
						fail(at+int64(k), fmt.Errorf("source ended after %d of %d bytes: %w", at+int64(k), n, io.ErrUnexpectedEOF))
						return
					}
					mu.Lock()
					if e := at + int64(k); limit < 0 || e < limit {
						limit = e
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if bad >= 0 && (limit < 0 || bad < limit) {
		return bad, ferr
	}
	return limit, nil
}

// forgetSource drops the uncommitted extents that refer to r: a failed
// ReadFromAt must not leave the File holding the caller's reader.
func (fl *File) forgetSource(r io.ReaderAt) {
	fl.wmu.Lock()
	defer fl.wmu.Unlock()
	kept := fl.uncommitted[:0]
	for _, e := range fl.uncommitted {
		if e.src == r {
			fl.held -= e.length()
			continue
		}
		kept = append(kept, e)
	}
	fl.uncommitted = kept
}

// workers is how many of depth workers a copy of size bytes in blocks of
// bs can keep busy: one per block, and one more to meet the end of a
// file that is exactly a number of blocks long.
func workers(depth int, size, bs int64) int {
	if size < 0 {
		size = 0
	}
	return int(min(int64(depth), size/bs+1))
}

// readBlockToFile reads n bytes of the file at off into f at fileOff
// (client.ReadToFile; buf, of capacity n+client.ReadOverhead, is lent for
// replies that cannot go to f directly). A short READ without eof is
// completed by further READs. It returns the bytes written into f.
func (fl *File) readBlockToFile(f *os.File, buf []byte, off, fileOff int64, n int) (int, bool, error) {
	got := 0
	for got < n {
		res, k, direct, err := fl.fs.nfs.ReadToFile(fl.fs.ctx, fl.fh, uint64(off)+uint64(got), uint32(n-got), f, fileOff+int64(got), buf)
		fl.fs.stats.readCalls.Add(1)
		var lwe *client.LocalWriteError
		if errors.As(err, &lwe) {
			return got, false, lwe.Err
		}
		if err != nil {
			return got, false, pathErr("read", fl.name, err)
		}
		fl.fs.stats.bytesRead.Add(int64(k))
		if direct {
			fl.fs.stats.bytesReadDirect.Add(int64(k))
		}
		got += k
		if res.EOF {
			return got, true, nil
		}
		if k == 0 {
			return got, false, pathErr("read", fl.name, errors.New("READ returned no data and no eof"))
		}
	}
	return got, false, nil
}
