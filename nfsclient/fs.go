package nfsclient

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// FS is a mounted NFSv3 export. Names are slash-separated paths relative
// to the export's root, valid per fs.ValidPath ("." is the root). It is
// safe for concurrent use.
type FS struct {
	*fsState
	ctx context.Context
}

// fsState is what every view of an FS shares.
type fsState struct {
	cfg    Config
	cred   oncrpc.OpaqueAuth
	export string
	sub    string
	root   []byte
	proto  Proto
	pool   *pool
	nfs    *client.Client
	rsize  int
	wsize  int
	// writeBufs holds wsize-byte buffers for WRITE data the client keeps
	// until a COMMIT makes it stable (file.go): reused, a large copy does
	// not fault in fresh memory for every block.
	writeBufs sync.Pool
	// readBufs holds buffers for READ replies of WriteToAt's workers
	// (rsize+client.ReadOverhead bytes of capacity): a copy of many small
	// files does not allocate depth of them per file.
	readBufs sync.Pool

	fellBack error

	mu        sync.Mutex
	ownProv   *verbs.RDMAProvider
	rdmaConns []*rdmaclient.Client

	stats counters
	dirs  dirCache

	// xids numbers the calls of every connection of the FS (reconn.Call):
	// a retransmission on a new connection keeps its XID.
	xids atomic.Uint32
}

type counters struct {
	retries, reconnects           atomic.Int64
	readCalls, writeCalls         atomic.Int64
	bytesRead, bytesWritten       atomic.Int64
	bytesReadDirect               atomic.Int64
	commits, resends, resentBytes atomic.Int64
}

var (
	_ fs.FS         = (*FS)(nil)
	_ fs.ReadDirFS  = (*FS)(nil)
	_ fs.StatFS     = (*FS)(nil)
	_ fs.ReadFileFS = (*FS)(nil)
	_ fs.ReadLinkFS = (*FS)(nil)
)

// WithContext returns a view of f whose calls are bounded by ctx (the
// io/fs methods have no context argument). The view shares everything
// else with f; closing either closes both.
func (f *FS) WithContext(ctx context.Context) *FS {
	return &FS{fsState: f.fsState, ctx: ctx}
}

// Export is the export that was mounted; Subpath is the rest of the URL's
// path below it ("" when the URL named the export).
func (f *FS) Export() string  { return f.export }
func (f *FS) Subpath() string { return f.sub }

// Proto is the transport in use; FallbackReason is why RDMA was not used
// when Dial fell back to TCP (nil otherwise).
func (f *FS) Proto() Proto           { return f.proto }
func (f *FS) FallbackReason() error  { return f.fellBack }
func (f *FS) BlockSizes() (r, w int) { return f.rsize, f.wsize }

// Timeout is the bound on each attempt of a call in use: Config.Timeout,
// DefaultTimeout when that was 0, and 0 when there is none (a negative
// Config.Timeout, timeout=0).
func (f *FS) Timeout() time.Duration { return max(f.cfg.Timeout, 0) }

// Stats are counters since Dial.
type Stats struct {
	Retries, Reconnects     int64 // calls sent again; connections re-made
	ReadCalls, WriteCalls   int64 // READ and WRITE calls
	BytesRead, BytesWritten int64
	// BytesReadDirect is the part of BytesRead that the transport wrote
	// into a local file straight from the connection (WriteToAt into an
	// *os.File): spliced from the socket over TCP, pwritten from the
	// registered region the server placed it in over RDMA; either way it
	// is copied into no Go buffer.
	BytesReadDirect int64
	Commits         int64 // COMMIT calls
	// Resends counts the times uncommitted data was written again because
	// the server's write verifier changed (it restarted), ResentBytes the
	// bytes written again.
	Resends, ResentBytes int64
	// RDMA sums the memory-key counters of the RDMA connections.
	RDMA rdmaclient.Stats
}

// Stats returns the counters.
func (f *FS) Stats() Stats {
	s := Stats{
		Retries: f.stats.retries.Load(), Reconnects: f.stats.reconnects.Load(),
		ReadCalls: f.stats.readCalls.Load(), WriteCalls: f.stats.writeCalls.Load(),
		BytesRead: f.stats.bytesRead.Load(), BytesWritten: f.stats.bytesWritten.Load(),
		BytesReadDirect: f.stats.bytesReadDirect.Load(),
		Commits:         f.stats.commits.Load(), Resends: f.stats.resends.Load(), ResentBytes: f.stats.resentBytes.Load(),
	}
	f.mu.Lock()
	for _, c := range f.rdmaConns {
		r := c.Stats()
		s.RDMA.Registrations += r.Registrations
		s.RDMA.Windows += r.Windows
		s.RDMA.Binds += r.Binds
		s.RDMA.RemoteInvalidations += r.RemoteInvalidations
		s.RDMA.LocalInvalidations += r.LocalInvalidations
		s.RDMA.PayloadCopies += r.PayloadCopies
		s.RDMA.PayloadBytes += r.PayloadBytes
	}
	f.mu.Unlock()
	return s
}

// node is a resolved name.
type node struct {
	fh   []byte
	attr wire.Fattr
}

const maxSymlinkHops = 40

// cleanName checks an io/fs name and splits it into components.
func cleanName(op, name string) ([]string, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return nil, nil
	}
	return strings.Split(name, "/"), nil
}

// resolve looks name up, following symbolic links in every component
// (and in the last one when follow is set).
func (f *FS) resolve(op, name string, follow bool) (*node, error) {
	parts, err := cleanName(op, name)
	if err != nil {
		return nil, err
	}
	n, err := f.walk(parts, follow, 0)
	if err != nil {
		return nil, pathErr(op, name, err)
	}
	return n, nil
}

func (f *FS) rootNode() (*node, error) {
	res, err := f.nfs.Getattr(f.ctx, f.root)
	if err != nil {
		return nil, err
	}
	return &node{fh: f.root, attr: res.Attr}, nil
}

// walk resolves parts from the root, starting at the deepest cached
// directory of the path; if that start turns out stale it resolves again
// from the root.
func (f *FS) walk(parts []string, follow bool, hops int) (*node, error) {
	if len(parts) == 0 {
		return f.rootNode()
	}
	start := 0
	fh := f.root
	for k := len(parts) - 1; k > 0; k-- {
		if c, ok := f.dirs.get(strings.Join(parts[:k], "/")); ok {
			start, fh = k, c
			break
		}
	}
	n, err := f.walkFrom(fh, start, parts, follow, hops)
	if err != nil && start > 0 {
		var se *StatusError
		if e := pathErr("", "", err); errorsAs(e, &se) && (se.Status == wire.ErrStale || se.Status == wire.ErrNoEnt || se.Status == wire.ErrNotDir) {
			f.dirs.forget(strings.Join(parts[:start], "/"))
			return f.walkFrom(f.root, 0, parts, follow, hops)
		}
	}
	return n, err
}

// walkFrom resolves parts[start:] from the directory dir (which is
// parts[:start]).
func (f *FS) walkFrom(dir []byte, start int, parts []string, follow bool, hops int) (*node, error) {
	cur := &node{fh: dir, attr: wire.Fattr{Type: wire.TypeDir}}
	for i := start; i < len(parts); i++ {
		name := parts[i]
		if cur.attr.Type != wire.TypeDir {
			return nil, statusErr(wire.ProcLookup, wire.ErrNotDir)
		}
		res, err := f.nfs.Lookup(f.ctx, cur.fh, name)
		if err != nil {
			return nil, err
		}
		next := &node{fh: res.FH, attr: res.ObjAttr.Attr}
		if !res.ObjAttr.Set {
			g, err := f.nfs.Getattr(f.ctx, res.FH)
			if err != nil {
				return nil, err
			}
			next.attr = g.Attr
		}
		last := i == len(parts)-1
		if next.attr.Type == wire.TypeLnk && (!last || follow) {
			if hops >= maxSymlinkHops {
				return nil, errors.New("too many levels of symbolic links")
			}
			rl, err := f.nfs.Readlink(f.ctx, next.fh)
			if err != nil {
				return nil, err
			}
			target, err := f.linkTarget(parts[:i], rl.Target)
			if err != nil {
				return nil, err
			}
			return f.walk(append(target, parts[i+1:]...), follow, hops+1)
		}
		if next.attr.Type == wire.TypeDir {
			f.dirs.put(strings.Join(parts[:i+1], "/"), next.fh)
		}
		cur = next
	}
	return cur, nil
}

// linkTarget turns a symbolic link's text, found in directory dir, into
// components from the export root. Resolution never leaves the export:
// an absolute target that starts with the export's path is taken below
// the export, any other absolute target relative to the export's root
// (as inside a chroot), and ".." stops at the root.
func (f *FS) linkTarget(dir []string, target string) ([]string, error) {
	var p string
	if strings.HasPrefix(target, "/") {
		exp := strings.TrimSuffix(f.export, "/")
		if exp != "" && (target == exp || strings.HasPrefix(target, exp+"/")) {
			target = strings.TrimPrefix(target, exp)
		}
		p = path.Clean("/" + target)
	} else {
		p = path.Clean("/" + path.Join(append(slices.Clone(dir), target)...))
	}
	if p == "/" {
		return nil, nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/"), nil
}

// parent resolves the directory of name and returns it with the base.
func (f *FS) parent(op, name string) (*node, string, error) {
	parts, err := cleanName(op, name)
	if err != nil {
		return nil, "", err
	}
	if len(parts) == 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	dir, err := f.walk(parts[:len(parts)-1], true, 0)
	if err != nil {
		return nil, "", pathErr(op, name, err)
	}
	if dir.attr.Type != wire.TypeDir {
		return nil, "", pathErr(op, name, statusErr(wire.ProcLookup, wire.ErrNotDir))
	}
	return dir, parts[len(parts)-1], nil
}

// Stat implements fs.StatFS (following symbolic links).
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	n, err := f.resolve("stat", name, true)
	if err != nil {
		return nil, err
	}
	return newFileInfo(path.Base(name), &n.attr), nil
}

// Lstat is Stat without following a symbolic link in the last component.
func (f *FS) Lstat(name string) (fs.FileInfo, error) {
	n, err := f.resolve("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return newFileInfo(path.Base(name), &n.attr), nil
}

// ReadLink implements fs.ReadLinkFS: the target of the symbolic link
// name.
func (f *FS) ReadLink(name string) (string, error) { return f.Readlink(name) }

// Readlink returns the target of the symbolic link name.
func (f *FS) Readlink(name string) (string, error) {
	n, err := f.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	res, err := f.nfs.Readlink(f.ctx, n.fh)
	if err != nil {
		return "", pathErr("readlink", name, err)
	}
	return res.Target, nil
}

// ReadDir implements fs.ReadDirFS: the entries of directory name, sorted
// by name, without "." and "..".
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := f.resolve("readdir", name, true)
	if err != nil {
		return nil, err
	}
	if n.attr.Type != wire.TypeDir {
		return nil, pathErr("readdir", name, statusErr(wire.ProcReaddirplus, wire.ErrNotDir))
	}
	ents, err := f.readDir(n.fh)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// readDir lists dir with READDIRPLUS, in server order.
func (f *FS) readDir(dir []byte) ([]fs.DirEntry, error) {
	ents, err := f.nfs.ReaddirplusAll(f.ctx, dir, 32<<10, 256<<10)
	if errors.Is(err, client.ErrNotSupp) {
		return f.readDirPlain(dir)
	}
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, 0, len(ents))
	for i := range ents {
		e := &ents[i]
		if e.Name == "." || e.Name == ".." {
			continue
		}
		attr := e.Attr.Attr
		if !e.Attr.Set {
			a, err := f.lookupAttr(dir, e.Name)
			if err != nil {
				return nil, err
			}
			attr = *a
		}
		out = append(out, dirEntry{newFileInfo(e.Name, &attr)})
	}
	return out, nil
}

// readDirPlain is readDir for servers without READDIRPLUS.
func (f *FS) readDirPlain(dir []byte) ([]fs.DirEntry, error) {
	ents, err := f.nfs.ReaddirAll(f.ctx, dir, 32<<10)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, 0, len(ents))
	for _, e := range ents {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		a, err := f.lookupAttr(dir, e.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, dirEntry{newFileInfo(e.Name, a)})
	}
	return out, nil
}

func (f *FS) lookupAttr(dir []byte, name string) (*wire.Fattr, error) {
	res, err := f.nfs.Lookup(f.ctx, dir, name)
	if err != nil {
		return nil, err
	}
	if res.ObjAttr.Set {
		return &res.ObjAttr.Attr, nil
	}
	g, err := f.nfs.Getattr(f.ctx, res.FH)
	if err != nil {
		return nil, err
	}
	return &g.Attr, nil
}

// ReadFile implements fs.ReadFileFS with pipelined READs.
func (f *FS) ReadFile(name string) ([]byte, error) {
	file, err := f.OpenFile(name, O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	size := file.size()
	buf := make([]byte, size)
	n, err := file.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	buf = buf[:n]
	// The file may have grown since GETATTR: read on to the end.
	for {
		more := make([]byte, max(f.rsize, 4096))
		k, err := file.ReadAt(more, int64(len(buf)))
		buf = append(buf, more[:k]...)
		if err == io.EOF || k == 0 {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Open implements fs.FS: the file or directory name, read only. A
// directory's File implements fs.ReadDirFile.
func (f *FS) Open(name string) (fs.File, error) {
	return f.OpenFile(name, O_RDONLY, 0)
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// writeBuf returns a buffer of wsize bytes for WRITE data (len wsize).
func (f *fsState) writeBuf() []byte {
	if b, ok := f.writeBufs.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, f.wsize)
}

// readBuf returns a buffer for a READ reply of rsize bytes of data
// (length 0); give it back with readBufs.Put.
func (f *fsState) readBuf() *[]byte {
	if b, ok := f.readBufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, f.rsize+client.ReadOverhead)
	return &b
}

// putWriteBuf returns a buffer from writeBuf once nothing refers to it:
// the data it held is committed (or was never sent).
func (f *fsState) putWriteBuf(b []byte) {
	if cap(b) != f.wsize {
		return
	}
	b = b[:cap(b)]
	f.writeBufs.Put(&b)
}
