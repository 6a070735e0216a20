package billyfs

import (
	"cmp"
	"container/list"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Ownership: the FS owns the billy files it opens (a bounded LRU of
// open files, closed on eviction, on removal of their node and by Close)
// and its side table. All state, and every call into the billy
// filesystem, is under one mutex: billy filesystems (memfs in
// particular) are not safe for concurrent use. Handles returned are fresh
// slices owned by the caller.

// Owner is the owner of objects the backend finds in the billy
// filesystem without having made them (Options.Owner).
type Owner struct {
	UID, GID uint32
}

// Options configures NewMem and New.
type Options struct {
	// Logger receives boundary events. Nil means no logging.
	Logger *zap.Logger
	// Owner owns the root and every object found in the billy filesystem
	// that was not created through this FS.
	Owner Owner
	// RootMode is the root's permission bits; zero means 0755. Objects
	// found in the billy filesystem get the permission bits billy reports.
	RootMode uint32
	// MaxOpenFiles bounds the cache of open billy files; zero means 1024.
	MaxOpenFiles int
}

// Memory handle layout: "M", three zero bytes, the instance salt
// (big-endian uint32), the node id (big-endian uint64).
const (
	memHandleLen   = 16
	memHandleMagic = 'M'
	memFirstCookie = 3 // cookies 1 and 2 are "." and ".."
	memDirSize     = 4096
)

// FS is the FS over any billy.Filesystem, with a side table for what
// billy cannot hold: node identity, ownership, times, special files and
// readdir cookies. See doc.go.
type FS struct {
	log     *zap.Logger
	bfs     billy.Filesystem
	owner   Owner
	salt    uint32
	maxOpen int

	mu     sync.Mutex
	closed bool
	nextID uint64
	byID   map[uint64]*memNode
	byPath map[string]*memNode
	root   *memNode
	files  map[uint64]*list.Element // of *memFile
	lru    list.List
	// dirGen changes whenever a directory may have been added, removed
	// or moved (Mkdir, Rmdir, Rename): a directory's link count, which
	// counts its subdirectories, stays valid while dirGen stands still,
	// so GETATTR of a large directory does not list it.
	dirGen uint64
}

// memNode is one object of the side table.
type memNode struct {
	id                  uint64
	path                string // billy path relative to the root, "" for the root
	gone                bool
	typ                 vfs.FileType
	mode, uid, gid      uint32
	major, minor        uint32
	atime, mtime, ctime time.Time
	// Directories: the per-directory insertion sequence that makes
	// ReadDir cookies.
	nextSeq uint64
	seqs    map[string]uint64
	order   []memSeq // every seq handed out still in seqs, ascending, plus stale ones
	// nlink is the directory's link count as of FS.dirGen == nlinkGen.
	nlink    uint32
	nlinkGen uint64
}

// memSeq is a directory entry's place in its directory's cookie order; it
// is stale once seqs holds another number (or none) for the name.
type memSeq struct {
	seq  uint64
	name string
}

type memFile struct {
	id uint64
	f  billy.File
}

// NewMem returns an empty in-memory FS (a go-billy memfs).
func NewMem(opts Options) *FS { return newMemFS(memfs.New(), opts) }

// New exports billy filesystem bfs, whose root must be a directory.
// Objects already in bfs get nodes on first sight, owned by opts.Owner.
func New(bfs billy.Filesystem, opts Options) (*FS, error) {
	fi, err := bfs.Lstat(".")
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &os.PathError{Op: "new", Path: ".", Err: syscall.ENOTDIR}
	}
	return newMemFS(bfs, opts), nil
}

func newMemFS(bfs billy.Filesystem, opts Options) *FS {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	var s [4]byte
	rand.Read(s[:])
	m := &FS{
		log:     log,
		bfs:     bfs,
		owner:   opts.Owner,
		salt:    binary.BigEndian.Uint32(s[:]),
		dirGen:  1,
		maxOpen: opts.MaxOpenFiles,
		byID:    make(map[uint64]*memNode),
		byPath:  make(map[string]*memNode),
		files:   make(map[uint64]*list.Element),
	}
	if m.maxOpen <= 0 {
		m.maxOpen = 1024
	}
	mode := opts.RootMode
	if mode == 0 {
		mode = 0o755
	}
	m.root = m.newNode("", vfs.TypeDir, mode, opts.Owner, time.Now())
	return m
}

func (m *FS) newNode(p string, t vfs.FileType, mode uint32, o Owner, now time.Time) *memNode {
	m.nextID++
	n := &memNode{id: m.nextID, path: p, typ: t, mode: mode & 0o7777, uid: o.UID, gid: o.GID,
		atime: now, mtime: now, ctime: now}
	if t == vfs.TypeDir {
		n.nextSeq = memFirstCookie
		n.seqs = make(map[string]uint64)
	}
	m.byID[n.id] = n
	m.byPath[p] = n
	return n
}

func (m *FS) handle(n *memNode) vfs.Handle {
	h := make(vfs.Handle, memHandleLen)
	h[0] = memHandleMagic
	binary.BigEndian.PutUint32(h[4:8], m.salt)
	binary.BigEndian.PutUint64(h[8:16], n.id)
	return h
}

func bpath(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// billyType maps what billy reports to a file type.
func billyType(fi os.FileInfo) vfs.FileType {
	switch {
	case fi.IsDir():
		return vfs.TypeDir
	case fi.Mode()&os.ModeSymlink != 0:
		return vfs.TypeLnk
	}
	return vfs.TypeReg
}

// at returns the node for path p that billy reports as fi, making one on
// first sight (or when billy's object changed kind under it).
func (m *FS) at(p string, fi os.FileInfo) *memNode {
	n := m.byPath[p]
	bt := billyType(fi)
	if n != nil && (n.typ == bt || (bt == vfs.TypeReg && n.typ != vfs.TypeDir && n.typ != vfs.TypeLnk)) {
		return n
	}
	if n != nil {
		m.forget(n)
	}
	mode := uint32(fi.Mode().Perm())
	if bt == vfs.TypeLnk {
		mode = 0o777
	}
	return m.newNode(p, bt, mode, m.owner, time.Now())
}

// forget marks n gone and drops its path and open file.
func (m *FS) forget(n *memNode) {
	n.gone = true
	if m.byPath[n.path] == n {
		delete(m.byPath, n.path)
	}
	m.closeFile(n.id)
}

// resolve maps h to a live node. Called with m.mu held.
func (m *FS) resolve(h vfs.Handle) (*memNode, error) {
	if m.closed {
		return nil, fs.ErrClosed
	}
	if len(h) != memHandleLen || h[0] != memHandleMagic || h[1]|h[2]|h[3] != 0 {
		return nil, vfs.ErrBadHandle
	}
	if binary.BigEndian.Uint32(h[4:8]) != m.salt {
		return nil, vfs.ErrStale
	}
	n := m.byID[binary.BigEndian.Uint64(h[8:16])]
	if n == nil || n.gone {
		return nil, vfs.ErrStale
	}
	if n == m.root {
		return n, nil
	}
	fi, err := m.bfs.Lstat(n.path)
	if err != nil || m.at(n.path, fi) != n {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			m.forget(n)
			return nil, vfs.ErrStale
		}
		return nil, err
	}
	return n, nil
}

// resolveDir resolves a directory handle and validates name.
func (m *FS) resolveDir(dir vfs.Handle, op, name string) (*memNode, error) {
	if err := vfs.CheckName(op, name); err != nil {
		return nil, err
	}
	d, err := m.resolve(dir)
	if err != nil {
		return nil, err
	}
	if d.typ != vfs.TypeDir {
		return nil, vfs.PathErr(op, name, syscall.ENOTDIR)
	}
	return d, nil
}

// child returns the node of name in d, or nil (and no error) when billy
// has no such name.
func (m *FS) child(d *memNode, name string) (*memNode, error) {
	p := join(d.path, name)
	fi, err := m.bfs.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return m.at(p, fi), nil
}

// billyErr gives an error billy returned an errno: its own if it has
// one, the one matching an io/fs sentinel, else EIO (keeping the text).
func billyErr(op, name string, err error) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		return err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return vfs.PathErr(op, name, syscall.ENOENT)
	case errors.Is(err, fs.ErrExist):
		return vfs.PathErr(op, name, syscall.EEXIST)
	case errors.Is(err, fs.ErrPermission):
		return vfs.PathErr(op, name, syscall.EACCES)
	}
	return &os.PathError{Op: op, Path: name, Err: fmt.Errorf("%w: %v", syscall.EIO, err)}
}

func (m *FS) attr(n *memNode) (vfs.Attr, error) {
	a := vfs.Attr{
		Type: n.typ, Mode: n.mode, Nlink: 1, UID: n.uid, GID: n.gid,
		FileID: n.id, Atime: n.atime, Mtime: n.mtime, Ctime: n.ctime,
	}
	switch n.typ {
	case vfs.TypeDir:
		if n.nlinkGen == 0 || n.nlinkGen != m.dirGen {
			fis, err := m.bfs.ReadDir(bpath(n.path))
			if err != nil {
				return vfs.Attr{}, billyErr("stat", n.path, err)
			}
			n.nlink = 2
			for _, fi := range fis {
				if fi.IsDir() {
					n.nlink++
				}
			}
			n.nlinkGen = m.dirGen
		}
		a.Nlink = n.nlink
		a.Size = memDirSize
	case vfs.TypeReg, vfs.TypeLnk:
		fi, err := m.bfs.Lstat(n.path)
		if err != nil {
			return vfs.Attr{}, billyErr("stat", n.path, err)
		}
		a.Size = uint64(fi.Size())
	case vfs.TypeChr, vfs.TypeBlk:
		a.Major, a.Minor = n.major, n.minor
	}
	a.Used = (a.Size + 4095) &^ 4095
	return a, nil
}

// file returns n's open billy file, opening it on first use.
func (m *FS) file(n *memNode) (billy.File, error) {
	if el := m.files[n.id]; el != nil {
		m.lru.MoveToFront(el)
		return el.Value.(*memFile).f, nil
	}
	f, err := m.bfs.OpenFile(n.path, os.O_RDWR, 0)
	if err != nil {
		return nil, billyErr("open", n.path, err)
	}
	m.cacheFile(n.id, f)
	return f, nil
}

func (m *FS) cacheFile(id uint64, f billy.File) {
	m.files[id] = m.lru.PushFront(&memFile{id: id, f: f})
	for m.lru.Len() > m.maxOpen {
		m.closeFile(m.lru.Back().Value.(*memFile).id)
	}
}

func (m *FS) closeFile(id uint64) {
	el := m.files[id]
	if el == nil {
		return
	}
	mf := el.Value.(*memFile)
	m.lru.Remove(el)
	delete(m.files, id)
	if err := mf.f.Close(); err != nil {
		m.log.Warn("closing cached file", zap.Error(err))
	}
}

func touch(n *memNode, now time.Time) { n.mtime, n.ctime = now, now }

// enter records a new name in directory d for the cookie sequence.
func enter(d *memNode, name string, now time.Time) {
	number(d, name)
	touch(d, now)
}

// number gives name the next number of directory d's cookie sequence.
func number(d *memNode, name string) {
	d.seqs[name] = d.nextSeq
	d.order = append(d.order, memSeq{d.nextSeq, name})
	d.nextSeq++
	compact(d)
}

// compact drops stale places from d.order once they are the majority.
func compact(d *memNode) {
	if len(d.order) <= 2*len(d.seqs)+64 {
		return
	}
	live := d.order[:0]
	for _, e := range d.order {
		if d.seqs[e.name] == e.seq {
			live = append(live, e)
		}
	}
	clear(d.order[len(live):])
	d.order = live
}

func leave(d *memNode, name string, now time.Time) {
	delete(d.seqs, name)
	compact(d)
	touch(d, now)
}

// cookieVerf is the memory backend's cookie verifier: zero, as cookies
// stay valid for the life of the instance, which is that of its handles
// (they carry the instance salt: a directory handle of another instance is
// stale before its cookies are read).
func (m *FS) cookieVerf() uint64 { return 0 }

// Root returns the export root's handle.
func (m *FS) Root() vfs.Handle { return m.handle(m.root) }

// GetAttr returns the attributes of h.
func (m *FS) GetAttr(h vfs.Handle) (vfs.Attr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.resolve(h)
	if err != nil {
		return vfs.Attr{}, err
	}
	return m.attr(n)
}

// SetAttr changes attributes as c in the order the OS backend does:
// owner (clearing set-id bits of a regular file, as Linux), mode (ignored
// on symlinks), size, times, with the kernel's rules (memPermitSetAttr).
func (m *FS) SetAttr(c vfs.Cred, h vfs.Handle, s vfs.SetAttr) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.Valid() {
		return syscall.EINVAL
	}
	n, err := m.resolve(h)
	if err != nil {
		return err
	}
	now := time.Now()
	if s.Size != nil {
		if err := vfs.CheckRegular(n.typ, "truncate"); err != nil {
			return err
		}
		if *s.Size > math.MaxInt64 {
			return vfs.PathErr("truncate", "", syscall.EFBIG)
		}
	}
	if err := vfs.CheckChownIDs(&c, &s); err != nil {
		return err
	}
	if err := memPermitSetAttr(&c, n, &s); err != nil {
		return err
	}
	if s.UID != nil || s.GID != nil {
		if s.UID != nil {
			n.uid = *s.UID
		}
		if s.GID != nil {
			n.gid = *s.GID
		}
		if n.typ == vfs.TypeReg {
			n.mode &^= 0o4000
			if n.mode&0o010 != 0 {
				n.mode &^= 0o2000
			}
		}
		n.ctime = now
	}
	if s.Mode != nil && n.typ != vfs.TypeLnk {
		n.mode = *s.Mode & 0o7777
		if c.UID != 0 && !c.InGroup(n.gid) {
			n.mode &^= 0o2000 // as setattr_prepare
		}
		n.ctime = now
	}
	if s.Size != nil {
		f, err := m.file(n)
		if err != nil {
			return err
		}
		if err := f.Truncate(int64(*s.Size)); err != nil {
			return billyErr("truncate", n.path, err)
		}
		killPriv(&c, n)
		touch(n, now)
	}
	switch {
	case s.AtimeNow:
		n.atime, n.ctime = now, now
	case s.Atime != nil:
		n.atime, n.ctime = *s.Atime, now
	}
	switch {
	case s.MtimeNow:
		n.mtime, n.ctime = now, now
	case s.Mtime != nil:
		n.mtime, n.ctime = *s.Mtime, now
	}
	return nil
}

// Lookup finds name in dir; c needs search permission on dir.
func (m *FS) Lookup(c vfs.Cred, dir vfs.Handle, name string) (vfs.Handle, vfs.Attr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.Valid() {
		return nil, vfs.Attr{}, syscall.EINVAL
	}
	d, err := m.resolve(dir)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	if d.typ != vfs.TypeDir {
		return nil, vfs.Attr{}, vfs.PathErr("lookup", name, syscall.ENOTDIR)
	}
	if err := memPermit(&c, d, vfs.MayExec, "lookup", name); err != nil {
		return nil, vfs.Attr{}, err
	}
	var n *memNode
	switch name {
	case ".":
		n = d
	case "..":
		n, err = m.parent(d)
	default:
		if err := vfs.CheckName("lookup", name); err != nil {
			return nil, vfs.Attr{}, err
		}
		n, err = m.child(d, name)
		if err == nil && n == nil {
			err = vfs.PathErr("lookup", name, syscall.ENOENT)
		}
	}
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	a, err := m.attr(n)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	return m.handle(n), a, nil
}

// parent returns d's parent directory (the root's is the root).
func (m *FS) parent(d *memNode) (*memNode, error) {
	if d == m.root {
		return d, nil
	}
	p := path.Dir(d.path)
	if p == "." {
		return m.root, nil
	}
	fi, err := m.bfs.Lstat(p)
	if err != nil {
		return nil, billyErr("lookup", "..", err)
	}
	return m.at(p, fi), nil
}

// ReadLink returns a symbolic link's target; EINVAL for other objects.
func (m *FS) ReadLink(h vfs.Handle) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.resolve(h)
	if err != nil {
		return "", err
	}
	if n.typ != vfs.TypeLnk {
		return "", vfs.PathErr("readlink", "", syscall.EINVAL)
	}
	t, err := m.bfs.Readlink(n.path)
	if err != nil {
		return "", billyErr("readlink", n.path, err)
	}
	return t, nil
}

// ReadAt reads from the cached open billy file. Access times are not
// updated (as a noatime mount).
func (m *FS) ReadAt(h vfs.Handle, p []byte, off int64) (int, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.resolve(h)
	if err != nil {
		return 0, false, err
	}
	if err := vfs.CheckRegular(n.typ, "read"); err != nil {
		return 0, false, err
	}
	if off < 0 {
		return 0, false, vfs.PathErr("read", "", syscall.EINVAL)
	}
	f, err := m.file(n)
	if err != nil {
		return 0, false, err
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, false, billyErr("read", n.path, err)
	}
	if off >= size || len(p) == 0 {
		return 0, off >= size, nil
	}
	c, err := f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		return c, false, billyErr("read", n.path, err)
	}
	return c, c < len(p) || off+int64(c) >= size, nil
}

// WriteAt writes through the cached open billy file; sync calls the
// file's Sync method when it has one. A write by c clears set-id bits as
// Linux does for a writer without CAP_FSETID.
func (m *FS) WriteAt(cred vfs.Cred, h vfs.Handle, p []byte, off int64, sync bool) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !cred.Valid() {
		return 0, syscall.EINVAL
	}
	n, err := m.resolve(h)
	if err != nil {
		return 0, err
	}
	if err := vfs.CheckRegular(n.typ, "write"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, vfs.PathErr("write", "", syscall.EINVAL)
	}
	if off > math.MaxInt64-int64(len(p)) || off+int64(len(p)) > math.MaxInt32 {
		// memfs keeps a file in one slice indexed by int.
		return 0, vfs.PathErr("write", "", syscall.EFBIG)
	}
	f, err := m.file(n)
	if err != nil {
		return 0, err
	}
	var c int
	if w, ok := f.(io.WriterAt); ok {
		c, err = w.WriteAt(p, off)
	} else if _, err = f.Seek(off, io.SeekStart); err == nil {
		c, err = f.Write(p)
	}
	if c > 0 {
		killPriv(&cred, n)
		touch(n, time.Now())
	}
	if err != nil {
		return c, billyErr("write", n.path, err)
	}
	if sync {
		return c, syncFile(f)
	}
	return c, nil
}

func syncFile(f billy.File) error {
	if s, ok := f.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			return billyErr("fsync", f.Name(), err)
		}
	}
	return nil
}

// Commit syncs the file when billy's file has a Sync method.
func (m *FS) Commit(h vfs.Handle) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.resolve(h)
	if err != nil {
		return err
	}
	if n.typ != vfs.TypeReg {
		return nil
	}
	f, err := m.file(n)
	if err != nil {
		return err
	}
	return syncFile(f)
}

// Create makes a regular file; see FS.Create. The verifier of an
// EXCLUSIVE create is kept in the times, as the OS backend does.
func (m *FS) Create(c vfs.Cred, dir vfs.Handle, name string, mode uint32, guarded, exclusive bool, verf [8]byte) (vfs.Handle, vfs.Attr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.Valid() {
		return nil, vfs.Attr{}, syscall.EINVAL
	}
	d, err := m.resolveDir(dir, "create", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	if err := memPermit(&c, d, vfs.MayExec, "create", name); err != nil {
		return nil, vfs.Attr{}, err
	}
	n, err := m.child(d, name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	if n != nil {
		a, err := m.attr(n)
		if err != nil {
			return nil, vfs.Attr{}, err
		}
		switch {
		case exclusive:
			va, vm := vfs.ExclusiveTimes(verf)
			if n.typ != vfs.TypeReg || n.atime.Unix() != va || n.mtime.Unix() != vm || a.Size != 0 {
				return nil, vfs.Attr{}, vfs.ErrExclusiveMismatch
			}
		case guarded || n.typ != vfs.TypeReg:
			return nil, vfs.Attr{}, vfs.PathErr("create", name, syscall.EEXIST)
		}
		return m.handle(n), a, nil
	}
	if err := memPermit(&c, d, vfs.MayWrite|vfs.MayExec, "create", name); err != nil {
		return nil, vfs.Attr{}, err
	}
	p := join(d.path, name)
	f, err := m.bfs.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, os.FileMode(mode&0o777))
	if err != nil {
		return nil, vfs.Attr{}, billyErr("create", name, err)
	}
	now := time.Now()
	owner, mode := newOwner(&c, d, vfs.TypeReg, mode)
	n = m.newNode(p, vfs.TypeReg, mode, owner, now)
	if exclusive {
		va, vm := vfs.ExclusiveTimes(verf)
		n.atime, n.mtime = time.Unix(va, 0), time.Unix(vm, 0)
	}
	m.cacheFile(n.id, f)
	enter(d, name, now)
	a, err := m.attr(n)
	return m.handle(n), a, err
}

// made finishes a creation by c: node, cookie sequence, attributes.
func (m *FS) made(c *vfs.Cred, d *memNode, name string, t vfs.FileType, mode uint32) (vfs.Handle, vfs.Attr, error) {
	now := time.Now()
	owner, mode := newOwner(c, d, t, mode)
	n := m.newNode(join(d.path, name), t, mode, owner, now)
	enter(d, name, now)
	a, err := m.attr(n)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	return m.handle(n), a, nil
}

// free checks, as the kernel's filename_create and may_create do for c,
// that d may be searched, that name does not exist in d, and that d may
// be written.
func (m *FS) free(c *vfs.Cred, d *memNode, op, name string) error {
	if err := memPermit(c, d, vfs.MayExec, op, name); err != nil {
		return err
	}
	n, err := m.child(d, name)
	if err != nil {
		return err
	}
	if n != nil {
		return vfs.PathErr(op, name, syscall.EEXIST)
	}
	return memPermit(c, d, vfs.MayWrite|vfs.MayExec, op, name)
}

// Mkdir makes a directory.
func (m *FS) Mkdir(c vfs.Cred, dir vfs.Handle, name string, mode uint32) (vfs.Handle, vfs.Attr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.Valid() {
		return nil, vfs.Attr{}, syscall.EINVAL
	}
	d, err := m.resolveDir(dir, "mkdir", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	if err := m.free(&c, d, "mkdir", name); err != nil {
		return nil, vfs.Attr{}, err
	}
	m.dirGen++
	if err := m.bfs.MkdirAll(join(d.path, name), os.FileMode(mode&0o777)); err != nil {
		return nil, vfs.Attr{}, billyErr("mkdir", name, err)
	}
	return m.made(&c, d, name, vfs.TypeDir, mode)
}

// Symlink makes a symbolic link; mode is ignored (0777, as Linux).
func (m *FS) Symlink(c vfs.Cred, dir vfs.Handle, name, target string, mode uint32) (vfs.Handle, vfs.Attr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.Valid() {
		return nil, vfs.Attr{}, syscall.EINVAL
	}
	d, err := m.resolveDir(dir, "symlink", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	switch {
	case target == "":
		return nil, vfs.Attr{}, vfs.PathErr("symlink", name, syscall.ENOENT)
	case strings.IndexByte(target, 0) >= 0:
		return nil, vfs.Attr{}, vfs.PathErr("symlink", name, syscall.EINVAL)
	case len(target) >= 4096:
		return nil, vfs.Attr{}, vfs.PathErr("symlink", name, syscall.ENAMETOOLONG)
	}
	if err := m.free(&c, d, "symlink", name); err != nil {
		return nil, vfs.Attr{}, err
	}
	if err := m.bfs.Symlink(target, join(d.path, name)); err != nil {
		return nil, vfs.Attr{}, billyErr("symlink", name, err)
	}
	return m.made(&c, d, name, vfs.TypeLnk, 0o777)
}

// Mknod makes a FIFO, socket or device node: an empty billy file whose
// kind lives in the side table (and is lost with it). EINVAL for other
// types.
func (m *FS) Mknod(c vfs.Cred, dir vfs.Handle, name string, typ vfs.FileType, mode uint32, major, minor uint32) (vfs.Handle, vfs.Attr, error) {
	switch typ {
	case vfs.TypeFIFO, vfs.TypeSock, vfs.TypeChr, vfs.TypeBlk:
	default:
		return nil, vfs.Attr{}, vfs.PathErr("mknod", name, syscall.EINVAL)
	}
	if !c.Valid() {
		return nil, vfs.Attr{}, syscall.EINVAL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.resolveDir(dir, "mknod", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	if err := m.free(&c, d, "mknod", name); err != nil {
		return nil, vfs.Attr{}, err
	}
	if (typ == vfs.TypeChr || typ == vfs.TypeBlk) && c.UID != 0 {
		return nil, vfs.Attr{}, vfs.PathErr("mknod", name, syscall.EPERM) // CAP_MKNOD
	}
	f, err := m.bfs.OpenFile(join(d.path, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, os.FileMode(mode&0o777))
	if err != nil {
		return nil, vfs.Attr{}, billyErr("mknod", name, err)
	}
	if err := f.Close(); err != nil {
		return nil, vfs.Attr{}, billyErr("mknod", name, err)
	}
	h, a, err := m.made(&c, d, name, typ, mode)
	if err == nil && (typ == vfs.TypeChr || typ == vfs.TypeBlk) {
		n := m.byPath[join(d.path, name)]
		n.major, n.minor = major, minor
		a.Major, a.Minor = major, minor
	}
	return h, a, err
}

// Remove unlinks a non-directory as c.
func (m *FS) Remove(c vfs.Cred, dir vfs.Handle, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.Valid() {
		return syscall.EINVAL
	}
	d, err := m.resolveDir(dir, "remove", name)
	if err != nil {
		return err
	}
	n, err := m.victim(&c, d, "remove", name)
	if err != nil {
		return err
	}
	if n.typ == vfs.TypeDir {
		return vfs.PathErr("remove", name, syscall.EISDIR)
	}
	m.closeFile(n.id)
	if err := m.bfs.Remove(n.path); err != nil {
		return billyErr("remove", name, err)
	}
	m.forget(n)
	leave(d, name, time.Now())
	return nil
}

// empty reports whether directory n has no entries.
func (m *FS) empty(n *memNode) (bool, error) {
	fis, err := m.bfs.ReadDir(bpath(n.path))
	if err != nil {
		return false, billyErr("readdir", n.path, err)
	}
	return len(fis) == 0, nil
}

// Rmdir removes an empty directory as c.
func (m *FS) Rmdir(c vfs.Cred, dir vfs.Handle, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.Valid() {
		return syscall.EINVAL
	}
	d, err := m.resolveDir(dir, "rmdir", name)
	if err != nil {
		return err
	}
	n, err := m.victim(&c, d, "rmdir", name)
	if err != nil {
		return err
	}
	if n.typ != vfs.TypeDir {
		return vfs.PathErr("rmdir", name, syscall.ENOTDIR)
	}
	if ok, err := m.empty(n); err != nil || !ok {
		if err == nil {
			err = vfs.PathErr("rmdir", name, syscall.ENOTEMPTY)
		}
		return err
	}
	m.dirGen++
	if err := m.bfs.Remove(n.path); err != nil {
		return billyErr("rmdir", name, err)
	}
	m.forget(n)
	leave(d, name, time.Now())
	return nil
}

// Rename moves fromName to toName with rename(2)'s rules: a directory
// replaces only an empty directory (else ENOTDIR / ENOTEMPTY), a
// non-directory only a non-directory (else EISDIR), and a directory
// cannot move below itself (EINVAL).
func (m *FS) Rename(c vfs.Cred, fromDir vfs.Handle, fromName string, toDir vfs.Handle, toName string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirGen++ // the link counts of both parents may change
	if !c.Valid() {
		return syscall.EINVAL
	}
	fd, err := m.resolveDir(fromDir, "rename", fromName)
	if err != nil {
		return err
	}
	td, err := m.resolveDir(toDir, "rename", toName)
	if err != nil {
		return err
	}
	src, err := m.victim(&c, fd, "rename", fromName)
	if err != nil {
		return err
	}
	from, to := src.path, join(td.path, toName)
	if from == to {
		return nil
	}
	if err := memPermit(&c, td, vfs.MayWrite|vfs.MayExec, "rename", toName); err != nil {
		return err
	}
	if src.typ == vfs.TypeDir && fd != td {
		// Its ".." entry changes: write permission on the directory
		// itself, as the kernel's may_delete / vfs_rename.
		if err := memPermit(&c, src, vfs.MayWrite, "rename", fromName); err != nil {
			return err
		}
	}
	if src.typ == vfs.TypeDir && strings.HasPrefix(to, from+"/") {
		return &os.LinkError{Op: "rename", Old: fromName, New: toName, Err: syscall.EINVAL}
	}
	dst, err := m.child(td, toName)
	if err != nil {
		return err
	}
	if dst != nil {
		if err := memSticky(&c, td, dst, "rename", toName); err != nil {
			return err
		}
		var e syscall.Errno
		switch {
		case src.typ == vfs.TypeDir && dst.typ != vfs.TypeDir:
			e = syscall.ENOTDIR
		case src.typ != vfs.TypeDir && dst.typ == vfs.TypeDir:
			e = syscall.EISDIR
		case dst.typ == vfs.TypeDir:
			ok, err := m.empty(dst)
			if err != nil {
				return err
			}
			if !ok {
				e = syscall.ENOTEMPTY
			}
		}
		if e != 0 {
			return &os.LinkError{Op: "rename", Old: fromName, New: toName, Err: e}
		}
		m.closeFile(dst.id)
		if err := m.bfs.Remove(to); err != nil {
			return billyErr("rename", toName, err)
		}
		m.forget(dst)
	}
	// Open billy files keep working across a billy rename, but not
	// across the copying fallback of billyRename: close them.
	var moved []*memNode
	for p, n := range m.byPath {
		if p == from || strings.HasPrefix(p, from+"/") {
			moved = append(moved, n)
			m.closeFile(n.id)
		}
	}
	if err := m.billyRename(from, to); err != nil {
		return billyErr("rename", fromName, err)
	}
	for _, n := range moved {
		if m.byPath[n.path] == n {
			delete(m.byPath, n.path)
		}
	}
	for _, n := range moved {
		n.path = to + strings.TrimPrefix(n.path, from)
		m.byPath[n.path] = n
	}
	now := time.Now()
	leave(fd, fromName, now)
	enter(td, toName, now)
	src.ctime = now
	return nil
}

// billyRename renames from to to in billy. go-billy v5 memfs moves every
// path that merely starts with from (renaming "a" also moves, or deletes,
// a sibling "ab"), so when a sibling's name has from's name as a prefix
// the move is done by hand: directories recreated and their entries
// moved one by one, files and links copied.
func (m *FS) billyRename(from, to string) error {
	dir, base := path.Split(from)
	fis, err := m.bfs.ReadDir(bpath(strings.TrimSuffix(dir, "/")))
	if err != nil {
		return err
	}
	hazard := false
	for _, fi := range fis {
		if fi.Name() != base && strings.HasPrefix(fi.Name(), base) {
			hazard = true
		}
	}
	if !hazard {
		return m.bfs.Rename(from, to)
	}
	fi, err := m.bfs.Lstat(from)
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		if err := m.bfs.MkdirAll(to, fi.Mode().Perm()); err != nil {
			return err
		}
		kids, err := m.bfs.ReadDir(from)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := m.billyRename(from+"/"+k.Name(), to+"/"+k.Name()); err != nil {
				return err
			}
		}
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := m.bfs.Readlink(from)
		if err != nil {
			return err
		}
		if err := m.bfs.Symlink(t, to); err != nil {
			return err
		}
	default:
		if err := m.copyFile(from, to, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return m.bfs.Remove(from)
}

func (m *FS) copyFile(from, to string, perm os.FileMode) error {
	src, err := m.bfs.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := m.bfs.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// Link is not supported: billy has no hard links.
func (m *FS) Link(c vfs.Cred, h vfs.Handle, dir vfs.Handle, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.Valid() {
		return syscall.EINVAL
	}
	if _, err := m.resolve(h); err != nil {
		return err
	}
	if _, err := m.resolveDir(dir, "link", name); err != nil {
		return err
	}
	return vfs.ErrNotSupported
}

// ReadDir lists dir in order of insertion; see doc.go for cookies.
func (m *FS) ReadDir(dir vfs.Handle, cookie, verf uint64, max int) ([]vfs.DirEntry, uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.resolve(dir)
	if err != nil {
		return nil, 0, false, err
	}
	if d.typ != vfs.TypeDir {
		return nil, 0, false, vfs.PathErr("readdir", "", syscall.ENOTDIR)
	}
	if max <= 0 {
		return nil, 0, false, vfs.PathErr("readdir", "", syscall.EINVAL)
	}
	if cookie >= d.nextSeq || (cookie != 0 && verf != 0 && verf != m.cookieVerf()) {
		return nil, 0, false, vfs.ErrBadCookie
	}
	if cookie == 0 {
		if err := m.reconcile(d); err != nil {
			return nil, 0, false, err
		}
	}
	par, err := m.parent(d)
	if err != nil {
		return nil, 0, false, err
	}
	var out []vfs.DirEntry
	if cookie < 1 {
		out = append(out, vfs.DirEntry{Name: ".", FileID: d.id, Cookie: 1})
	}
	if cookie < 2 && len(out) < max {
		out = append(out, vfs.DirEntry{Name: "..", FileID: par.id, Cookie: 2})
	}
	i, _ := slices.BinarySearchFunc(d.order, cookie+1, func(e memSeq, c uint64) int { return cmp.Compare(e.seq, c) })
	for ; i < len(d.order); i++ {
		e := d.order[i]
		if d.seqs[e.name] != e.seq {
			continue
		}
		p := join(d.path, e.name)
		n := m.byPath[p]
		if n == nil {
			// Found in billy by a reconciliation, never looked up.
			fi, err := m.bfs.Lstat(bpath(p))
			if err != nil {
				delete(d.seqs, e.name)
				continue
			}
			n = m.at(p, fi)
		}
		if len(out) == max {
			return out, m.cookieVerf(), false, nil
		}
		out = append(out, vfs.DirEntry{Name: e.name, FileID: n.id, Cookie: e.seq})
	}
	return out, m.cookieVerf(), true, nil
}

// reconcile brings d's cookie sequence in line with billy at the start of
// a listing: names billy gained behind our back are appended (in name
// order), names it lost are dropped.
func (m *FS) reconcile(d *memNode) error {
	fis, err := m.bfs.ReadDir(bpath(d.path))
	if err != nil {
		return billyErr("readdir", d.path, err)
	}
	present := make(map[string]bool, len(fis))
	for _, fi := range fis {
		present[fi.Name()] = true
		if _, ok := d.seqs[fi.Name()]; !ok {
			number(d, fi.Name())
		}
	}
	for name := range d.seqs {
		if !present[name] {
			delete(d.seqs, name)
		}
	}
	return nil
}

// FSStat reports synthetic figures: billy has no statfs. Total and free
// are 1 TiB and 2^32 files, minus one file per node the side table
// knows; bytes used are not tracked.
func (m *FS) FSStat() (vfs.FSStat, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return vfs.FSStat{}, fs.ErrClosed
	}
	const total, files = 1 << 40, 1 << 32
	free := uint64(files - len(m.byPath))
	return vfs.FSStat{TotalBytes: total, FreeBytes: total, AvailBytes: total,
		TotalFiles: files, FreeFiles: free, AvailFiles: free}, nil
}

// OpenFiles reports the billy files held open by the cache.
func (m *FS) OpenFiles() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.files)
}

// Close closes every cached billy file; later calls fail with
// fs.ErrClosed. Close is idempotent.
func (m *FS) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for id := range m.files {
		m.closeFile(id)
	}
	return nil
}

// Permission rules of the memory backend: the kernel's, applied by hand
// since billy has no identities (see doc.go, "Identity").

func memAttr(n *memNode) vfs.Attr { return vfs.Attr{Type: n.typ, Mode: n.mode, UID: n.uid, GID: n.gid} }

// memPermit is EACCES unless c may access n as may.
func memPermit(c *vfs.Cred, n *memNode, may uint32, op, name string) error {
	a := memAttr(n)
	if c.May(&a, may) {
		return nil
	}
	return vfs.PathErr(op, name, syscall.EACCES)
}

// memSticky is the sticky-directory rule of may_delete: in a sticky
// directory only the owner of the entry or of the directory (or root) may
// remove or replace it (EPERM).
func memSticky(c *vfs.Cred, d, n *memNode, op, name string) error {
	if d.mode&0o1000 == 0 || c.UID == 0 || c.UID == d.uid || c.UID == n.uid {
		return nil
	}
	return vfs.PathErr(op, name, syscall.EPERM)
}

// victim finds name in d for removal or renaming by c: search and write
// permission on d, ENOENT, the sticky rule.
func (m *FS) victim(c *vfs.Cred, d *memNode, op, name string) (*memNode, error) {
	if err := memPermit(c, d, vfs.MayExec, op, name); err != nil {
		return nil, err
	}
	n, err := m.child(d, name)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, vfs.PathErr(op, name, syscall.ENOENT)
	}
	if err := memPermit(c, d, vfs.MayWrite|vfs.MayExec, op, name); err != nil {
		return nil, err
	}
	if err := memSticky(c, d, n, op, name); err != nil {
		return nil, err
	}
	return n, nil
}

// newOwner is the owner and mode of an object c creates in d, as the
// kernel's inode_init_owner: c's uid; the directory's group when it is
// set-group-ID (a new directory then inherits the bit), else c's gid; a
// set-group-ID bit on a group-executable file is dropped when c is
// neither root nor a member of that group (mode_strip_sgid).
func newOwner(c *vfs.Cred, d *memNode, t vfs.FileType, mode uint32) (Owner, uint32) {
	o := Owner{UID: c.UID, GID: c.GID}
	mode &= 0o7777
	if d.mode&0o2000 != 0 {
		o.GID = d.gid
		if t == vfs.TypeDir {
			mode |= 0o2000
		} else if mode&0o2010 == 0o2010 && c.UID != 0 && !c.InGroup(d.gid) {
			mode &^= 0o2000
		}
	}
	return o, mode
}

// killPriv drops set-id bits of regular file n written or truncated by
// c, as setattr_should_drop_suidgid for a caller without CAP_FSETID:
// set-user-ID always, set-group-ID when group-executable or when c is
// not in the file's group.
func killPriv(c *vfs.Cred, n *memNode) {
	if c.UID == 0 || n.typ != vfs.TypeReg {
		return
	}
	n.mode &^= 0o4000
	if n.mode&0o2000 != 0 && (n.mode&0o010 != 0 || !c.InGroup(n.gid)) {
		n.mode &^= 0o2000
	}
}

// memPermitSetAttr applies chown(2), chmod(2), truncate(2) and
// utimensat(2)'s rules for c: a new owner needs root, a new group
// ownership and membership, a mode and explicit times ownership (EPERM);
// times set to now ownership or write permission (EACCES). Write
// permission for a size change is the NFS layer's check (owner override).
func memPermitSetAttr(c *vfs.Cred, n *memNode, s *vfs.SetAttr) error {
	if c.UID == 0 {
		return nil
	}
	owner := c.UID == n.uid
	switch {
	case s.UID != nil && *s.UID != n.uid,
		s.GID != nil && *s.GID != n.gid && (!owner || !c.InGroup(*s.GID)),
		s.Mode != nil && !owner,
		((s.Atime != nil && !s.AtimeNow) || (s.Mtime != nil && !s.MtimeNow)) && !owner:
		return vfs.PathErr("setattr", "", syscall.EPERM)
	}
	if (s.AtimeNow || s.MtimeNow) && !owner {
		a := memAttr(n)
		if !c.May(&a, vfs.MayWrite) {
			return vfs.PathErr("utimes", "", syscall.EACCES)
		}
	}
	return nil
}

var _ vfs.FS = (*FS)(nil)
