package nfsclient

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// Open flags (the os package's values, as go-billy uses them).
const (
	O_RDONLY = os.O_RDONLY
	O_WRONLY = os.O_WRONLY
	O_RDWR   = os.O_RDWR
	O_APPEND = os.O_APPEND
	O_CREATE = os.O_CREATE
	O_EXCL   = os.O_EXCL
	O_TRUNC  = os.O_TRUNC
	O_SYNC   = os.O_SYNC
)

// File is an open remote file or directory. Its methods are safe for
// concurrent use; ReadAt and WriteAt do not use the offset and may run in
// parallel.
//
// Writes go to the server as UNSTABLE WRITEs and are kept by the File
// (copied; the caller's buffer is free when Write returns) until a COMMIT
// with the same write verifier makes them stable: on Sync, on Close, and
// whenever Config.MaxUncommitted bytes are held. If the verifier changed
// (the server restarted and may have lost them) they are written again.
type File struct {
	fs   *FS
	name string
	fh   []byte
	flag int
	dir  bool

	mu   sync.Mutex
	attr wire.Fattr
	off  int64
	// Directory listing state.
	ents    []fs.DirEntry
	entsPos int
	listed  bool
	// Write state: pending holds the coalescing buffer of sequential
	// writes at pendingOff.
	pending    []byte
	pendingOff int64
	closed     bool
	// Read-ahead of Read: rbuf holds the file's bytes at rbufOff.
	rbuf    []byte
	rbufOff int64

	wmu         sync.Mutex // guards the uncommitted list and verifier
	uncommitted []extent
	held        int
	verf        [wire.WriteVerfSize]byte
	haveVerf    bool
	verfChanged bool
}

// extent is uncommitted data at file offset off: held in data, or, for
// ReadFromAt, n bytes to read again from src at srcOff.
type extent struct {
	off    int64
	data   []byte
	src    io.ReaderAt
	srcOff int64
	n      int
}

func (e extent) length() int {
	if e.src != nil {
		return e.n
	}
	return len(e.data)
}

var (
	_ fs.ReadDirFile = (*File)(nil)
	_ io.ReaderAt    = (*File)(nil)
	_ io.WriterAt    = (*File)(nil)
	_ io.Seeker      = (*File)(nil)
	_ io.WriterTo    = (*File)(nil)
	_ io.ReaderFrom  = (*File)(nil)
)

// OpenFile opens name with os-style flags; perm is the mode of a file
// O_CREATE makes.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (*File, error) {
	var n *node
	var err error
	if flag&O_CREATE != 0 {
		n, err = f.create(name, flag, perm)
	} else {
		n, err = f.resolve("open", name, true)
	}
	if err != nil {
		return nil, err
	}
	writable := flag&(O_WRONLY|O_RDWR) != 0
	if n.attr.Type == wire.TypeDir && writable {
		return nil, pathErr("open", name, statusErr(wire.ProcWrite, wire.ErrIsDir))
	}
	file := &File{fs: f, name: name, fh: n.fh, flag: flag, attr: n.attr, dir: n.attr.Type == wire.TypeDir}
	if flag&O_TRUNC != 0 && writable && n.attr.Size != 0 {
		if err := file.Truncate(0); err != nil {
			return nil, err
		}
	}
	return file, nil
}

// create resolves or creates name for OpenFile.
func (f *FS) create(name string, flag int, perm fs.FileMode) (*node, error) {
	dir, base, err := f.parent("open", name)
	if err != nil {
		return nil, err
	}
	if flag&O_EXCL == 0 {
		if res, err := f.nfs.Lookup(f.ctx, dir.fh, base); err == nil {
			a := res.ObjAttr.Attr
			if !res.ObjAttr.Set {
				g, err := f.nfs.Getattr(f.ctx, res.FH)
				if err != nil {
					return nil, pathErr("open", name, err)
				}
				a = g.Attr
			}
			if a.Type == wire.TypeLnk {
				return f.resolve("open", name, true)
			}
			return &node{fh: res.FH, attr: a}, nil
		} else if !errors.Is(err, client.ErrNoEnt) {
			return nil, pathErr("open", name, err)
		}
	}
	how := wire.CreateHow{Mode: wire.Unchecked, Attr: wire.Sattr{Mode: wire.SetUint32{Set: true, V: uint32(perm.Perm())}}}
	if flag&O_EXCL != 0 {
		how.Mode = wire.Guarded
	}
	res, err := f.nfs.Create(f.ctx, dir.fh, base, how)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	n := &node{fh: res.FH.FH, attr: res.Attr.Attr}
	if !res.FH.Set {
		l, err := f.nfs.Lookup(f.ctx, dir.fh, base)
		if err != nil {
			return nil, pathErr("open", name, err)
		}
		n.fh = l.FH
	}
	if !res.Attr.Set {
		g, err := f.nfs.Getattr(f.ctx, n.fh)
		if err != nil {
			return nil, pathErr("open", name, err)
		}
		n.attr = g.Attr
	}
	return n, nil
}

// Name is the name the file was opened with.
func (fl *File) Name() string { return fl.name }

// Handle is the NFSv3 file handle.
func (fl *File) Handle() []byte { return fl.fh }

func (fl *File) size() int64 {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return int64(fl.attr.Size)
}

// Stat implements fs.File with a fresh GETATTR.
func (fl *File) Stat() (fs.FileInfo, error) {
	if err := fl.flushPending(); err != nil {
		return nil, err
	}
	res, err := fl.fs.nfs.Getattr(fl.fs.ctx, fl.fh)
	if err != nil {
		return nil, pathErr("stat", fl.name, err)
	}
	fl.mu.Lock()
	fl.attr = res.Attr
	fl.mu.Unlock()
	return newFileInfo(path.Base(fl.name), &res.Attr), nil
}

// ReadDir implements fs.ReadDirFile.
func (fl *File) ReadDir(n int) ([]fs.DirEntry, error) {
	if !fl.dir {
		return nil, pathErr("readdir", fl.name, statusErr(wire.ProcReaddirplus, wire.ErrNotDir))
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if !fl.listed {
		ents, err := fl.fs.readDir(fl.fh)
		if err != nil {
			return nil, pathErr("readdir", fl.name, err)
		}
		fl.ents, fl.listed = ents, true
	}
	rest := fl.ents[fl.entsPos:]
	if n <= 0 {
		fl.entsPos = len(fl.ents)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	k := min(n, len(rest))
	fl.entsPos += k
	return rest[:k], nil
}

// checkOpen fails once the file is closed.
func (fl *File) checkOpen(op string) error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed {
		return pathErr(op, fl.name, fs.ErrClosed)
	}
	return nil
}

// Read reads from the current offset.
func (fl *File) Read(p []byte) (int, error) {
	if err := fl.checkOpen("read"); err != nil {
		return 0, err
	}
	if fl.dir {
		return 0, pathErr("read", fl.name, statusErr(wire.ProcRead, wire.ErrIsDir))
	}
	if fl.flag&O_WRONLY != 0 {
		return 0, pathErr("read", fl.name, fs.ErrPermission)
	}
	if err := fl.flushPending(); err != nil {
		return 0, err
	}
	fl.mu.Lock()
	off := fl.off
	if off >= fl.rbufOff && off < fl.rbufOff+int64(len(fl.rbuf)) {
		n := copy(p, fl.rbuf[off-fl.rbufOff:])
		fl.off += int64(n)
		fl.mu.Unlock()
		return n, nil
	}
	fl.mu.Unlock()
	if len(p) >= fl.fs.rsize {
		n, err := fl.ReadAt(p, off)
		fl.mu.Lock()
		fl.off = off + int64(n)
		fl.mu.Unlock()
		if n > 0 && err == io.EOF {
			err = nil
		}
		return n, err
	}
	// Small reads are served from one READ of the read size.
	buf := make([]byte, fl.fs.rsize)
	k, err := fl.ReadAt(buf, off)
	if k == 0 {
		if err == nil {
			err = io.EOF
		}
		return 0, err
	}
	n := copy(p, buf[:k])
	fl.mu.Lock()
	fl.rbuf, fl.rbufOff = buf[:k], off
	fl.off = off + int64(n)
	fl.mu.Unlock()
	return n, nil
}

// dropReadAhead forgets read-ahead data (after a write).
func (fl *File) dropReadAhead() {
	fl.mu.Lock()
	fl.rbuf = nil
	fl.mu.Unlock()
}

// ReadAt implements io.ReaderAt with READs of the read size, up to
// Config.Depth in flight.
func (fl *File) ReadAt(p []byte, off int64) (int, error) {
	if err := fl.checkOpen("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", fl.name, fs.ErrInvalid)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := fl.flushPending(); err != nil {
		return 0, err
	}
	bs := fl.fs.rsize
	nblk := (len(p) + bs - 1) / bs
	type result struct {
		n   int
		eof bool
		err error
	}
	res := make([]result, nblk)
	sem := make(chan struct{}, fl.fs.cfg.Depth)
	var wg sync.WaitGroup
	for i := 0; i < nblk; i++ {
		lo := i * bs
		hi := min(lo+bs, len(p))
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			n, eof, err := fl.readFull(p[lo:hi], off+int64(lo))
			res[i] = result{n, eof, err}
		}()
	}
	wg.Wait()
	total := 0
	for i, r := range res {
		total += r.n
		if r.err != nil {
			return total, r.err
		}
		want := min(bs, len(p)-i*bs)
		if r.n < want {
			if r.eof {
				return total, io.EOF
			}
			return total, io.ErrUnexpectedEOF
		}
	}
	// A full buffer is success even at end of file (io.ReaderAt allows
	// either; callers such as go-billy expect nil).
	return total, nil
}

// readFull fills p from off with READs until it is full or the server
// says eof.
func (fl *File) readFull(p []byte, off int64) (int, bool, error) {
	buf := make([]byte, 0, len(p)+client.ReadOverhead)
	n := 0
	for n < len(p) {
		res, err := fl.fs.nfs.ReadInto(fl.fs.ctx, fl.fh, uint64(off)+uint64(n), uint32(len(p)-n), buf)
		fl.fs.stats.readCalls.Add(1)
		if err != nil {
			return n, false, pathErr("read", fl.name, err)
		}
		if len(res.Data) > len(p)-n {
			return n, false, pathErr("read", fl.name, fmt.Errorf("server returned %d bytes for a READ of %d", len(res.Data), len(p)-n))
		}
		n += copy(p[n:], res.Data)
		fl.fs.stats.bytesRead.Add(int64(len(res.Data)))
		if res.EOF {
			return n, true, nil
		}
		if len(res.Data) == 0 {
			return n, false, pathErr("read", fl.name, errors.New("READ returned no data and no eof"))
		}
	}
	return n, false, nil
}

// WriteTo implements io.WriterTo: it streams the file from the current
// offset to w with up to Config.Depth READs in flight, delivering data in
// order. Each READ's reply is read into a pooled buffer and its data is
// written to w from there, without another copy.
func (fl *File) WriteTo(w io.Writer) (int64, error) {
	if err := fl.flushPending(); err != nil {
		return 0, err
	}
	fl.mu.Lock()
	start := fl.off
	fl.mu.Unlock()
	bs := fl.fs.rsize
	type blk struct {
		buf  *[]byte
		data []byte
		eof  bool
		err  error
		done chan struct{}
	}
	pool := sync.Pool{New: func() any { b := make([]byte, 0, bs+client.ReadOverhead); return &b }}
	depth := fl.fs.cfg.Depth
	queue := make(chan *blk, depth)
	stop := make(chan struct{})
	go func() {
		defer close(queue)
		for off := start; ; off += int64(bs) {
			b := &blk{buf: pool.Get().(*[]byte), done: make(chan struct{})}
			select {
			case queue <- b:
			case <-stop:
				pool.Put(b.buf)
				return
			}
			go func(off int64) {
				b.data, b.eof, b.err = fl.readBlock(*b.buf, off, bs)
				close(b.done)
			}(off)
		}
	}()
	var total int64
	var err error
	for b := range queue {
		<-b.done
		if err == nil {
			if len(b.data) > 0 {
				k, werr := w.Write(b.data)
				total += int64(k)
				if werr != nil {
					err = werr
				}
			}
			if b.err != nil && err == nil {
				err = b.err
			}
			if err == nil && (b.eof || len(b.data) < bs) {
				err = io.EOF
			}
			if err != nil {
				close(stop)
			}
		}
		b.data = nil
		pool.Put(b.buf)
	}
	fl.mu.Lock()
	fl.off = start + total
	fl.mu.Unlock()
	if err == io.EOF {
		err = nil
	}
	return total, err
}

// readBlock reads n bytes at off; the data aliases buf (capacity
// n+client.ReadOverhead) when the transport read the reply into it. A
// short READ without eof is completed by further READs.
func (fl *File) readBlock(buf []byte, off int64, n int) ([]byte, bool, error) {
	res, err := fl.fs.nfs.ReadInto(fl.fs.ctx, fl.fh, uint64(off), uint32(n), buf)
	fl.fs.stats.readCalls.Add(1)
	if err != nil {
		return nil, false, pathErr("read", fl.name, err)
	}
	if len(res.Data) > n {
		return nil, false, pathErr("read", fl.name, fmt.Errorf("server returned %d bytes for a READ of %d", len(res.Data), n))
	}
	fl.fs.stats.bytesRead.Add(int64(len(res.Data)))
	if res.EOF || len(res.Data) == n {
		return res.Data, res.EOF, nil
	}
	if len(res.Data) == 0 {
		return nil, false, pathErr("read", fl.name, errors.New("READ returned no data and no eof"))
	}
	data := make([]byte, n)
	k := copy(data, res.Data)
	m, eof, err := fl.readFull(data[k:], off+int64(k))
	return data[:k+m], eof, err
}

// Seek implements io.Seeker.
func (fl *File) Seek(offset int64, whence int) (int64, error) {
	if err := fl.checkOpen("seek"); err != nil {
		return 0, err
	}
	if err := fl.flushPending(); err != nil {
		return 0, err
	}
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		fl.mu.Lock()
		base = fl.off
		fl.mu.Unlock()
	case io.SeekEnd:
		fi, err := fl.Stat()
		if err != nil {
			return 0, err
		}
		base = fi.Size()
	default:
		return 0, pathErr("seek", fl.name, fs.ErrInvalid)
	}
	if base+offset < 0 {
		return 0, pathErr("seek", fl.name, fs.ErrInvalid)
	}
	fl.mu.Lock()
	fl.off = base + offset
	fl.mu.Unlock()
	return base + offset, nil
}

func (fl *File) checkWritable(op string) error {
	if err := fl.checkOpen(op); err != nil {
		return err
	}
	if fl.flag&(O_WRONLY|O_RDWR) == 0 {
		return pathErr(op, fl.name, fs.ErrPermission)
	}
	if fl.dir {
		return pathErr(op, fl.name, statusErr(wire.ProcWrite, wire.ErrIsDir))
	}
	return nil
}

// Write writes at the current offset (at the end with O_APPEND).
// Sequential small writes are gathered into WRITEs of the write size.
func (fl *File) Write(p []byte) (int, error) {
	if err := fl.checkWritable("write"); err != nil {
		return 0, err
	}
	if fl.flag&O_APPEND != 0 {
		if err := fl.flushPending(); err != nil {
			return 0, err
		}
		fi, err := fl.Stat()
		if err != nil {
			return 0, err
		}
		fl.mu.Lock()
		fl.off = fi.Size()
		fl.mu.Unlock()
	}
	fl.mu.Lock()
	off := fl.off
	bs := fl.fs.wsize
	if len(fl.pending) > 0 && fl.pendingOff+int64(len(fl.pending)) == off && len(fl.pending)+len(p) <= bs {
		fl.pending = append(fl.pending, p...)
		fl.off += int64(len(p))
		full := len(fl.pending) == bs
		fl.mu.Unlock()
		if full {
			return len(p), fl.flushPending()
		}
		return len(p), nil
	}
	fl.mu.Unlock()
	if err := fl.flushPending(); err != nil {
		return 0, err
	}
	if len(p) < bs && fl.flag&O_SYNC == 0 {
		fl.mu.Lock()
		fl.pending = append(fl.fs.writeBuf()[:0], p...)
		fl.pendingOff = off
		fl.off = off + int64(len(p))
		fl.mu.Unlock()
		return len(p), nil
	}
	n, err := fl.WriteAt(p, off)
	fl.mu.Lock()
	fl.off = off + int64(n)
	fl.mu.Unlock()
	return n, err
}

// flushPending writes out the coalesced sequential writes.
func (fl *File) flushPending() error {
	fl.mu.Lock()
	p, off := fl.pending, fl.pendingOff
	fl.pending = nil
	fl.mu.Unlock()
	if len(p) == 0 {
		return nil
	}
	_, err := fl.writeBlocks(p, off, true)
	return err
}

// WriteAt implements io.WriterAt with UNSTABLE WRITEs of the write size,
// up to Config.Depth in flight.
func (fl *File) WriteAt(p []byte, off int64) (int, error) {
	if err := fl.checkWritable("write"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", fl.name, fs.ErrInvalid)
	}
	if err := fl.flushPending(); err != nil {
		return 0, err
	}
	n, err := fl.writeBlocks(p, off, false)
	if err == nil && fl.flag&O_SYNC != 0 {
		err = fl.Sync()
	}
	return n, err
}

// writeBlocks writes p at off; owned says p may be kept as is (else it
// is copied for a possible re-send).
func (fl *File) writeBlocks(p []byte, off int64, owned bool) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	fl.dropReadAhead()
	bs := fl.fs.wsize
	nblk := (len(p) + bs - 1) / bs
	errs := make([]error, nblk)
	sem := make(chan struct{}, fl.fs.cfg.Depth)
	var wg sync.WaitGroup
	for i := 0; i < nblk; i++ {
		lo := i * bs
		hi := min(lo+bs, len(p))
		data := p[lo:hi]
		if !owned {
			b := fl.fs.writeBuf()
			data = b[:copy(b, data)]
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fl.writeOne(data, off+int64(lo))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return i * bs, err
		}
	}
	fl.mu.Lock()
	if end := uint64(off) + uint64(len(p)); end > fl.attr.Size {
		fl.attr.Size = end
	}
	fl.mu.Unlock()
	fl.wmu.Lock()
	over := fl.held > fl.fs.cfg.MaxUncommitted
	fl.wmu.Unlock()
	if over {
		if err := fl.commit(); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// writeOne sends one UNSTABLE WRITE of data (kept until committed),
// writing again what the server accepted short.
func (fl *File) writeOne(data []byte, off int64) error {
	if err := fl.send(data, off); err != nil {
		return err
	}
	fl.keep(extent{off: off, data: data})
	return nil
}

// send writes data at off with UNSTABLE WRITEs until the server has
// accepted all of it.
func (fl *File) send(data []byte, off int64) error {
	for done := 0; done < len(data); {
		res, err := fl.fs.nfs.Write(fl.fs.ctx, fl.fh, uint64(off)+uint64(done), data[done:], wire.Unstable)
		fl.fs.stats.writeCalls.Add(1)
		if err != nil {
			return pathErr("write", fl.name, err)
		}
		if res.Count == 0 || int(res.Count) > len(data)-done {
			return pathErr("write", fl.name, fmt.Errorf("server accepted %d of %d bytes", res.Count, len(data)-done))
		}
		fl.fs.stats.bytesWritten.Add(int64(res.Count))
		fl.noteVerf(res.Verf, res.Committed)
		done += int(res.Count)
	}
	return nil
}

// keep lists e as written and not yet committed.
func (fl *File) keep(e extent) {
	fl.wmu.Lock()
	fl.uncommitted = append(fl.uncommitted, e)
	fl.held += e.length()
	fl.wmu.Unlock()
}

// noteVerf records a WRITE's verifier; a different one than the first
// since the last COMMIT means the server restarted in between.
func (fl *File) noteVerf(v [wire.WriteVerfSize]byte, _ wire.StableHow) {
	fl.wmu.Lock()
	defer fl.wmu.Unlock()
	if !fl.haveVerf {
		fl.verf, fl.haveVerf = v, true
	} else if v != fl.verf {
		fl.verfChanged = true
		fl.verf = v
	}
}

// Sync writes out gathered writes and COMMITs everything uncommitted,
// writing it again when the write verifier shows the server restarted.
func (fl *File) Sync() error {
	if err := fl.flushPending(); err != nil {
		return err
	}
	return fl.commit()
}

const maxResendRounds = 5

func (fl *File) commit() error {
	for round := 0; ; round++ {
		fl.wmu.Lock()
		if len(fl.uncommitted) == 0 {
			fl.wmu.Unlock()
			return nil
		}
		ext := fl.uncommitted
		verf, changed := fl.verf, fl.verfChanged
		fl.wmu.Unlock()
		res, err := fl.fs.nfs.Commit(fl.fs.ctx, fl.fh, 0, 0)
		fl.fs.stats.commits.Add(1)
		if err != nil {
			return pathErr("commit", fl.name, err)
		}
		fl.wmu.Lock()
		if !changed && !fl.verfChanged && res.Verf == verf && fl.verf == verf {
			// Everything written so far is stable; writes that raced
			// with the COMMIT stay listed. The committed extents' WRITEs
			// have completed, so their buffers are free.
			for _, e := range ext {
				fl.fs.putWriteBuf(e.data)
			}
			fl.uncommitted = fl.uncommitted[len(ext):]
			fl.held = 0
			for _, e := range fl.uncommitted {
				fl.held += e.length()
			}
			fl.haveVerf = len(fl.uncommitted) > 0
			fl.wmu.Unlock()
			continue
		}
		// The server lost (or may have lost) the data: send it again.
		fl.uncommitted, fl.held = nil, 0
		fl.verf, fl.haveVerf, fl.verfChanged = res.Verf, true, false
		fl.wmu.Unlock()
		if round >= maxResendRounds {
			return pathErr("commit", fl.name, errors.New("the server's write verifier keeps changing"))
		}
		fl.fs.stats.resends.Add(1)
		for _, e := range ext {
			fl.fs.stats.resentBytes.Add(int64(e.length()))
			if e.src != nil {
				if _, err := fl.sendFrom(e.src, e.srcOff, int64(e.n), e.off); err != nil {
					return err
				}
				continue
			}
			if _, err := fl.writeBlocks(e.data, e.off, true); err != nil {
				return err
			}
		}
	}
}

// Truncate sets the file's size (SETATTR).
func (fl *File) Truncate(size int64) error {
	if err := fl.checkWritable("truncate"); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", fl.name, fs.ErrInvalid)
	}
	if err := fl.Sync(); err != nil {
		return err
	}
	res, err := fl.fs.nfs.Setattr(fl.fs.ctx, fl.fh, wire.Sattr{Size: wire.SetUint64{Set: true, V: uint64(size)}}, nil)
	if err != nil {
		return pathErr("truncate", fl.name, err)
	}
	fl.mu.Lock()
	if res.Wcc.After.Set {
		fl.attr = res.Wcc.After.Attr
	} else {
		fl.attr.Size = uint64(size)
	}
	fl.mu.Unlock()
	return nil
}

// startWrite readies the file for a bulk write from the current offset:
// writable, earlier buffered writes sent, read-ahead dropped. It returns
// that offset.
func (fl *File) startWrite() (int64, error) {
	if err := fl.checkWritable("write"); err != nil {
		return 0, err
	}
	if err := fl.flushPending(); err != nil {
		return 0, err
	}
	fl.dropReadAhead()
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.off, nil
}

// ReadFrom implements io.ReaderFrom: it writes r's data from the current
// offset with up to Config.Depth WRITEs in flight.
func (fl *File) ReadFrom(r io.Reader) (int64, error) {
	start, err := fl.startWrite()
	if err != nil {
		return 0, err
	}
	sem := make(chan struct{}, fl.fs.cfg.Depth)
	var wg sync.WaitGroup
	var emu sync.Mutex
	var werr error
	var total int64
	var rerr error
	for {
		emu.Lock()
		failed := werr != nil
		emu.Unlock()
		if failed {
			break
		}
		buf := fl.fs.writeBuf()
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			off := start + total
			total += int64(n)
			sem <- struct{}{}
			wg.Add(1)
			go func(data []byte) {
				defer func() { <-sem; wg.Done() }()
				if err := fl.writeOne(data, off); err != nil {
					emu.Lock()
					if werr == nil {
						werr = err
					}
					emu.Unlock()
				}
			}(buf[:n])
		} else {
			fl.fs.putWriteBuf(buf)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			rerr = err
			break
		}
		fl.wmu.Lock()
		over := fl.held > fl.fs.cfg.MaxUncommitted
		fl.wmu.Unlock()
		if over {
			wg.Wait()
			if err := fl.commit(); err != nil {
				return total, err
			}
		}
	}
	wg.Wait()
	fl.mu.Lock()
	fl.off = start + total
	if end := uint64(fl.off); end > fl.attr.Size {
		fl.attr.Size = end
	}
	fl.mu.Unlock()
	if werr != nil {
		return total, werr
	}
	return total, rerr
}

// Close writes out and commits pending data (see Sync).
func (fl *File) Close() error {
	fl.mu.Lock()
	if fl.closed {
		fl.mu.Unlock()
		return pathErr("close", fl.name, fs.ErrClosed)
	}
	fl.closed = true
	fl.mu.Unlock()
	if fl.flag&(O_WRONLY|O_RDWR) == 0 {
		return nil
	}
	return fl.Sync()
}
