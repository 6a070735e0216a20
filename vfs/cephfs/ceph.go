//go:build ceph && linux && cgo

package cephfs

/*
#cgo LDFLAGS: -lcephfs
#cgo CPPFLAGS: -D_FILE_OFFSET_BITS=64
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <dirent.h>
#include <cephfs/libcephfs.h>

// The shim: libcephfs calls whose arguments cgo cannot build (struct
// values, dev_t macros), nothing else.

static int gcf_lookup_vino(struct ceph_mount_info *m, uint64_t ino, uint64_t snap, struct Inode **out) {
	vinodeno_t v;
	v.ino.val = ino;
	v.snapid.val = snap;
	return ceph_ll_lookup_vino(m, v, out);
}

static unsigned gcf_major(dev_t d) { return major(d); }
static unsigned gcf_minor(dev_t d) { return minor(d); }
static dev_t gcf_makedev(unsigned ma, unsigned mi) { return makedev(ma, mi); }

static int gcf_create_from_rados(struct ceph_mount_info **m, void *cluster) {
	return ceph_create_from_rados(m, (rados_t)cluster);
}

// gcf_read_dir reads up to max entries after the directory stream's
// position into names (NUL-separated, at most cap bytes), inos and cookies
// (the position after each entry, ceph_telldir); *eof is set when the
// stream ended. Returns the count or a negative errno.
static int gcf_read_dir(struct ceph_mount_info *m, struct ceph_dir_result *d, int max,
		char *names, size_t cap, uint64_t *inos, int64_t *cookies, int *eof) {
	struct dirent de;
	size_t used = 0;
	int n = 0;
	*eof = 0;
	while (n < max) {
		int64_t before = ceph_telldir(m, d);
		int r = ceph_readdir_r(m, d, &de);
		if (r < 0)
			return r;
		if (r == 0) {
			*eof = 1;
			return n;
		}
		size_t len = strlen(de.d_name) + 1;
		if (used + len > cap) {
			ceph_seekdir(m, d, before);
			return n;
		}
		memcpy(names + used, de.d_name, len);
		used += len;
		inos[n] = de.d_ino;
		cookies[n] = ceph_telldir(m, d);
		n++;
	}
	// Full: peek, so that a listing that ends exactly here says so.
	int64_t pos = ceph_telldir(m, d);
	int r = ceph_readdir_r(m, d, &de);
	if (r == 0)
		*eof = 1;
	else
		ceph_seekdir(m, d, pos);
	return n;
}
*/
import "C"

import (
	"container/list"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/ceph/go-ceph/rados"
	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Built reports whether this binary has the CephFS backend.
const Built = true

// FS is one export of a CephFS directory through libcephfs's low-level
// (inode) API. It implements vfs.FS.
type FS struct {
	log   *zap.Logger
	conn  *rados.Conn
	m     *C.struct_ceph_mount_info
	codec handleCodec
	root  *node
	max   int

	rootPath, fsName string

	// life guards m: every call holds it shared, Close exclusively.
	life   sync.RWMutex
	closed bool

	mu    sync.Mutex // guards nodes, byHandle, lru and node refs
	nodes map[Vino]*node
	// byHandle finds cached nodes by their handle's bytes, so a handle
	// seen before is not authenticated again (a node's handle is the only
	// one that decodes to it: handleCodec.encode is deterministic).
	byHandle map[string]*node
	lru      list.List // of *node, most recently used first; the root is not in it

	rootPerm *C.UserPerm

	// obs is a second mount of the same directory, made and unmade by
	// refreshDirStat to make the MDS take back the capability through
	// which libcephfs keeps a stale link count.
	obsMu sync.Mutex
	obs   *C.struct_ceph_mount_info
	// refreshHook, when set (by tests only), is called at the start of
	// every refreshDirStat with the directory refreshed.
	refreshHook func(Vino)

	// grace is the file system's shared grace records (grace.go); nil
	// without Options.HeadID.
	grace *graceStore

	calls callCounts // libcephfs calls made (calls.go)

	// names orders this head's changes to directory entries (namelock.go).
	names nameLocks
}

// node is one inode the FS holds a libcephfs reference on, with its open
// files. refs counts the cache's reference (while cached) and each call
// using it; the libcephfs reference and open files are released when it
// drops to zero.
type node struct {
	vino   Vino
	handle string // f.codec.encode(vino)
	in     *C.struct_Inode
	typ    vfs.FileType
	refs   int
	cached bool
	elem   *list.Element

	fhMu     sync.Mutex
	rfh, wfh *C.struct_Fh
}

// New mounts the CephFS directory o.Root of the cluster o.ConfigFile names
// and returns it as a vfs.FS.
func New(o Options) (*FS, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	user := o.ClientID
	if user == "" {
		user = "admin"
	}
	conn, err := rados.NewConnWithUser(user)
	if err != nil {
		return nil, fmt.Errorf("cephfs: %w", err)
	}
	if o.ConfigFile != "" {
		err = conn.ReadConfigFile(o.ConfigFile)
	} else {
		err = conn.ReadDefaultConfigFile()
	}
	if err != nil {
		return nil, fmt.Errorf("cephfs: reading the cluster configuration %q: %w", o.ConfigFile, err)
	}
	quietClientLogs(conn)
	if o.Keyring != "" {
		if err := conn.SetConfigOption("keyring", o.Keyring); err != nil {
			return nil, fmt.Errorf("cephfs: keyring %q: %w", o.Keyring, err)
		}
	}
	if o.MountTimeout > 0 {
		secs := fmt.Sprint(int(o.MountTimeout.Seconds() + 0.5))
		_ = conn.SetConfigOption("client_mount_timeout", secs)
		_ = conn.SetConfigOption("rados_mon_op_timeout", secs)
	}
	if err := conn.Connect(); err != nil {
		return nil, fmt.Errorf("cephfs: connecting to the cluster as client.%s: %w", user, err)
	}
	f := &FS{log: o.Logger, conn: conn, nodes: map[Vino]*node{}, byHandle: map[string]*node{}, max: o.MaxOpenFiles}
	if f.log == nil {
		f.log = zap.NewNop()
	}
	if f.max <= 0 {
		f.max = 1024
	}
	fail := func(err error) (*FS, error) {
		if f.m != nil {
			C.ceph_shutdown(f.m)
		}
		if f.grace != nil {
			f.grace.close()
		}
		conn.Shutdown()
		return nil, err
	}
	if r := C.gcf_create_from_rados(&f.m, unsafe.Pointer(conn.Cluster())); r < 0 {
		return fail(fmt.Errorf("cephfs: ceph_create_from_rados: %w", cerr(r)))
	}
	if o.FSName != "" {
		cs := C.CString(o.FSName)
		r := C.ceph_select_filesystem(f.m, cs)
		C.free(unsafe.Pointer(cs))
		if r < 0 {
			return fail(fmt.Errorf("cephfs: file system %q: %w", o.FSName, cerr(r)))
		}
	}
	rootPath := o.Root
	if rootPath == "" {
		rootPath = "/"
	}
	inGrace := o.HeadID != "" && time.Now().Before(o.GraceUntil)
	if o.HeadID != "" {
		if f.grace, err = openGraceStore(conn, o.FSName); err != nil {
			return fail(err)
		}
	}
	if inGrace {
		if err := f.grace.set(o.HeadID, o.GraceUntil); err != nil {
			return fail(err)
		}
		f.log.Info("cephfs: recorded this head's grace period for the other heads", zap.String("object", f.grace.oid), zap.String("head", o.HeadID), zap.Time("until", o.GraceUntil))
	}
	if o.SessionUUID != "" {
		if err := f.reclaim(o.SessionUUID); err != nil {
			return fail(err)
		}
	}
	cr := C.CString(rootPath)
	r := C.ceph_mount(f.m, cr)
	C.free(unsafe.Pointer(cr))
	if r < 0 {
		return fail(fmt.Errorf("cephfs: mounting %q: %w", rootPath, cerr(r)))
	}
	f.rootPerm = C.ceph_userperm_new(0, 0, 0, nil)
	var in *C.struct_Inode
	if r := C.ceph_ll_lookup_root(f.m, &in); r < 0 {
		return fail(fmt.Errorf("cephfs: root inode: %w", cerr(r)))
	}
	var stx C.struct_ceph_statx
	f.calls.add(callGetattr)
	if r := C.ceph_ll_getattr(f.m, in, &stx, C.CEPH_STATX_BASIC_STATS, 0, f.rootPerm); r < 0 {
		C.ceph_ll_put(f.m, in)
		return fail(fmt.Errorf("cephfs: root attributes: %w", cerr(r)))
	}
	if stx.stx_mode&C.S_IFMT != C.S_IFDIR {
		C.ceph_ll_put(f.m, in)
		return fail(fmt.Errorf("cephfs: %q is not a directory", rootPath))
	}
	f.rootPath, f.fsName = rootPath, o.FSName
	f.root = &node{vino: Vino{uint64(stx.stx_ino), NoSnap}, in: in, typ: vfs.TypeDir, refs: 1, cached: true}
	f.nodes[f.root.vino] = f.root
	f.codec = handleCodec{domain: append([]byte(nil), o.HandleDomain...), fscid: uint64(C.ceph_get_fs_cid(f.m))}
	if len(o.HandleKey) > 0 {
		f.codec.key = append([]byte(nil), o.HandleKey...)
	} else if f.codec.key, err = f.loadKey(); err != nil {
		f.releaseNode(f.root)
		C.ceph_userperm_destroy(f.rootPerm)
		return fail(err)
	}
	if o.HeadID != "" && !inGrace {
		if err := f.grace.clear(o.HeadID); err != nil {
			f.log.Warn("cephfs: this head's old grace record stays", zap.Error(err))
		}
	}
	f.root.handle = string(f.codec.encode(f.root.vino))
	f.byHandle[f.root.handle] = f.root
	return f, nil
}

// clientLogDefaults are Pacific's defaults (ceph-conf --show-config-value)
// of the client-side debug subsystems an NFS head goes through on every
// call: file system calls, the object cache, OSD requests. "0/5" writes nothing
// to the log file but still formats every message up to level 5 into the
// in-memory ring that a crash dump prints (libcephfs logs each ll_* call
// at level 3), and the log thread sorts them out; for 4 KiB READs and
// CREATEs that was a tenth of the process's samples.
var clientLogDefaults = map[string]string{
	"debug_client":       "0/5",
	"debug_objectcacher": "0/5",
	"debug_objecter":     "0/1",
}

// quietClientLogs sets each of clientLogDefaults that the configuration
// left at its default to "0/0" (no gathering): a level an admin set in
// ceph.conf (or the environment) is kept.
func quietClientLogs(conn *rados.Conn) {
	for name, def := range clientLogDefaults {
		if v, err := conn.GetConfigOption(name); err == nil && v == def {
			_ = conn.SetConfigOption(name, "0/0")
		}
	}
}

// reclaim ends the MDS session an earlier run of this head left behind
// (a crash leaves it open, with its capabilities, until the MDS's session
// timeout), then names this session uuid so that the next run can do the
// same: ceph_start_reclaim with CEPH_RECLAIM_RESET, as NFS-Ganesha does.
func (f *FS) reclaim(uuid string) error {
	if r := C.ceph_init(f.m); r < 0 {
		return fmt.Errorf("cephfs: ceph_init: %w", cerr(r))
	}
	cu := C.CString(uuid)
	defer C.free(unsafe.Pointer(cu))
	switch r := C.ceph_start_reclaim(f.m, cu, C.CEPH_RECLAIM_RESET); {
	case r == 0:
		C.ceph_finish_reclaim(f.m)
		f.log.Info("cephfs: reset the session of this head's previous run", zap.String("uuid", uuid))
	case syscall.Errno(-r) == syscall.ENOENT:
		// No earlier session: a clean start.
	default:
		return fmt.Errorf("cephfs: reclaiming session %s: %w", uuid, cerr(r))
	}
	C.ceph_set_uuid(f.m, cu)
	return nil
}

// loadKey reads the handle key from the export root's extended attribute
// KeyXattr, creating it (32 random bytes, XATTR_CREATE, so that heads
// starting together agree on one) when it is missing.
func (f *FS) loadKey() ([]byte, error) {
	name := C.CString(KeyXattr)
	defer C.free(unsafe.Pointer(name))
	buf := make([]byte, 256)
	for range 3 {
		r := C.ceph_ll_getxattr(f.m, f.root.in, name, unsafe.Pointer(&buf[0]), C.size_t(len(buf)), f.rootPerm)
		if r >= 16 {
			return append([]byte(nil), buf[:r]...), nil
		}
		if r >= 0 {
			return nil, fmt.Errorf("cephfs: handle key %s on the export root is %d bytes, too short", KeyXattr, r)
		}
		if e := syscall.Errno(-r); e != syscall.ENODATA {
			return nil, fmt.Errorf("cephfs: reading handle key %s: %w", KeyXattr, e)
		}
		key := make([]byte, 32)
		rand.Read(key)
		w := C.ceph_ll_setxattr(f.m, f.root.in, name, unsafe.Pointer(&key[0]), C.size_t(len(key)), C.XATTR_CREATE, f.rootPerm)
		if w == 0 {
			f.log.Info("cephfs: created the handle key", zap.String("xattr", KeyXattr))
			return key, nil
		}
		if e := syscall.Errno(-w); e != syscall.EEXIST {
			return nil, fmt.Errorf("cephfs: creating handle key %s: %w", KeyXattr, e)
		}
	}
	return nil, fmt.Errorf("cephfs: handle key %s keeps changing", KeyXattr)
}

// cerr turns a negative libcephfs return into its errno.
func cerr(r C.int) error { return syscall.Errno(-r) }

func perr(op string, r C.int) error { return &os.PathError{Op: op, Err: syscall.Errno(-r)} }

// enter starts a call: it fails after Close.
func (f *FS) enter() error {
	f.life.RLock()
	if f.closed {
		f.life.RUnlock()
		return fs.ErrClosed
	}
	return nil
}

func (f *FS) leave() { f.life.RUnlock() }

// perm returns the libcephfs credential of c and its release. The zero
// Cred (root without supplementary groups) shares one object.
func (f *FS) perm(c *vfs.Cred) (*C.UserPerm, func(), error) {
	if !c.Valid() {
		return nil, nil, &os.PathError{Op: "cred", Err: syscall.EINVAL}
	}
	if c.UID == 0 && c.GID == 0 && len(c.GIDs) == 0 {
		return f.rootPerm, func() {}, nil
	}
	var gids *C.gid_t
	if n := len(c.GIDs); n > 0 {
		gids = (*C.gid_t)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.gid_t(0)))))
		s := unsafe.Slice(gids, n)
		for i, g := range c.GIDs {
			s[i] = C.gid_t(g)
		}
	}
	p := C.ceph_userperm_new(C.uid_t(c.UID), C.gid_t(c.GID), C.int(len(c.GIDs)), gids)
	return p, func() {
		C.ceph_userperm_destroy(p)
		if gids != nil {
			C.free(unsafe.Pointer(gids))
		}
	}, nil
}

// get resolves h to a node with a reference for the caller (put it).
func (f *FS) get(h vfs.Handle) (*node, error) {
	f.mu.Lock()
	if n := f.byHandle[string(h)]; n != nil {
		n.refs++
		if n.elem != nil {
			f.lru.MoveToFront(n.elem)
		}
		f.mu.Unlock()
		return n, nil
	}
	f.mu.Unlock()
	v, err := f.codec.decode(h)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if n := f.nodes[v]; n != nil {
		n.refs++
		if n.elem != nil {
			f.lru.MoveToFront(n.elem)
		}
		f.mu.Unlock()
		return n, nil
	}
	f.mu.Unlock()
	var in *C.struct_Inode
	f.calls.add(callLookupVino)
	if r := C.gcf_lookup_vino(f.m, C.uint64_t(v.Ino), C.uint64_t(v.Snap), &in); r < 0 {
		if e := syscall.Errno(-r); e == syscall.ESTALE || e == syscall.ENOENT {
			return nil, vfs.ErrStale
		}
		return nil, perr("lookup_vino", r)
	}
	var stx C.struct_ceph_statx
	f.calls.add(callGetattr)
	if r := C.ceph_ll_getattr(f.m, in, &stx, C.CEPH_STATX_MODE|C.CEPH_STATX_NLINK, 0, f.rootPerm); r < 0 || stx.stx_nlink == 0 {
		C.ceph_ll_put(f.m, in)
		if r < 0 && syscall.Errno(-r) != syscall.ESTALE && syscall.Errno(-r) != syscall.ENOENT {
			return nil, perr("getattr", r)
		}
		return nil, vfs.ErrStale
	}
	return f.insert(v, in, modeType(uint32(stx.stx_mode))), nil
}

// insert caches in (whose libcephfs reference it takes over) as v and
// returns its node with a reference for the caller.
func (f *FS) insert(v Vino, in *C.struct_Inode, typ vfs.FileType) *node {
	f.mu.Lock()
	if n := f.nodes[v]; n != nil {
		n.refs++
		f.mu.Unlock()
		C.ceph_ll_put(f.m, in)
		return n
	}
	n := &node{vino: v, handle: string(f.codec.encode(v)), in: in, typ: typ, refs: 2, cached: true}
	f.nodes[v] = n
	f.byHandle[n.handle] = n
	n.elem = f.lru.PushFront(n)
	var victims []*node
	for f.lru.Len() > f.max {
		old := f.lru.Back().Value.(*node)
		if o := f.uncacheLocked(old); o != nil {
			victims = append(victims, o)
		}
	}
	f.mu.Unlock()
	for _, o := range victims {
		f.releaseNode(o)
	}
	return n
}

// uncacheLocked drops the cache's reference on n; it returns n when that
// was the last one (the caller then releases it, outside f.mu).
func (f *FS) uncacheLocked(n *node) *node {
	if !n.cached || n == f.root {
		return nil
	}
	n.cached = false
	delete(f.nodes, n.vino)
	delete(f.byHandle, n.handle)
	f.lru.Remove(n.elem)
	n.elem = nil
	n.refs--
	if n.refs == 0 {
		return n
	}
	return nil
}

// put drops the caller's reference on n.
func (f *FS) put(n *node) {
	f.mu.Lock()
	n.refs--
	last := n.refs == 0
	f.mu.Unlock()
	if last {
		f.releaseNode(n)
	}
}

// evict forgets v (removed, replaced or found stale): its open files are
// closed once no call uses them.
func (f *FS) evict(v Vino) {
	f.mu.Lock()
	var o *node
	if n := f.nodes[v]; n != nil {
		o = f.uncacheLocked(n)
	}
	f.mu.Unlock()
	if o != nil {
		f.releaseNode(o)
	}
}

func (f *FS) releaseNode(n *node) {
	for _, fh := range []*C.struct_Fh{n.rfh, n.wfh} {
		if fh != nil {
			f.calls.add(callClose)
			if r := C.ceph_ll_close(f.m, fh); r < 0 {
				f.log.Warn("cephfs: close", zap.Uint64("ino", n.vino.Ino), zap.Error(cerr(r)))
			}
		}
	}
	n.rfh, n.wfh = nil, nil
	C.ceph_ll_put(f.m, n.in)
}

// OpenFiles is the number of inodes the FS holds (the root included),
// for vfstest.CheckNoLeaks.
func (f *FS) OpenFiles() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0
	}
	return len(f.nodes)
}

func modeType(m uint32) vfs.FileType {
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return vfs.TypeDir
	case syscall.S_IFLNK:
		return vfs.TypeLnk
	case syscall.S_IFBLK:
		return vfs.TypeBlk
	case syscall.S_IFCHR:
		return vfs.TypeChr
	case syscall.S_IFSOCK:
		return vfs.TypeSock
	case syscall.S_IFIFO:
		return vfs.TypeFIFO
	}
	return vfs.TypeReg
}

const wantAttr = C.CEPH_STATX_BASIC_STATS

func ts(t C.struct_timespec) time.Time { return time.Unix(int64(t.tv_sec), int64(t.tv_nsec)) }

func (f *FS) toAttr(stx *C.struct_ceph_statx) vfs.Attr {
	a := vfs.Attr{
		Type:   modeType(uint32(stx.stx_mode)),
		Mode:   uint32(stx.stx_mode) & 0o7777,
		Nlink:  uint32(stx.stx_nlink),
		UID:    uint32(stx.stx_uid),
		GID:    uint32(stx.stx_gid),
		Size:   uint64(stx.stx_size),
		Used:   uint64(stx.stx_blocks) * 512,
		FileID: uint64(stx.stx_ino),
		Atime:  ts(stx.stx_atime),
		Mtime:  ts(stx.stx_mtime),
		Ctime:  ts(stx.stx_ctime),
	}
	if a.Type == vfs.TypeBlk || a.Type == vfs.TypeChr {
		a.Major, a.Minor = uint32(C.gcf_major(stx.stx_rdev)), uint32(C.gcf_minor(stx.stx_rdev))
	}
	if a.Type == vfs.TypeDir {
		// CephFS directories report their entry count in size; NFS
		// clients only need something stable.
		a.Used = a.Size
	}
	return a
}

// attr returns n's attributes as the server; an object whose last link
// is gone is stale (and forgotten).
func (f *FS) attr(n *node) (vfs.Attr, error) {
	var stx C.struct_ceph_statx
	f.calls.add(callGetattr)
	if r := C.ceph_ll_getattr(f.m, n.in, &stx, wantAttr, 0, f.rootPerm); r < 0 {
		if e := syscall.Errno(-r); e == syscall.ESTALE || e == syscall.ENOENT {
			f.evict(n.vino)
			return vfs.Attr{}, vfs.ErrStale
		}
		return vfs.Attr{}, perr("getattr", r)
	}
	if stx.stx_nlink == 0 {
		f.evict(n.vino)
		return vfs.Attr{}, vfs.ErrStale
	}
	return f.toAttr(&stx), nil
}

// Root returns the export root's handle.
func (f *FS) Root() vfs.Handle { return vfs.Handle(f.root.handle) }

// GetAttr returns the attributes of h.
func (f *FS) GetAttr(h vfs.Handle) (vfs.Attr, error) {
	if err := f.enter(); err != nil {
		return vfs.Attr{}, err
	}
	defer f.leave()
	n, err := f.get(h)
	if err != nil {
		return vfs.Attr{}, err
	}
	defer f.put(n)
	return f.attr(n)
}

// killPriv is the mode a write or truncation by a caller without
// CAP_FSETID leaves: set-user-ID gone, set-group-ID gone when group
// execute is set (without it the bit means mandatory locking), as the
// kernel's should_remove_suid.
func killPriv(mode uint32) uint32 {
	mode &^= syscall.S_ISUID
	if mode&0o010 != 0 {
		mode &^= syscall.S_ISGID
	}
	return mode
}

// SetAttr changes attributes of h as c.
func (f *FS) SetAttr(c vfs.Cred, h vfs.Handle, s vfs.SetAttr) error {
	if err := f.enter(); err != nil {
		return err
	}
	defer f.leave()
	if err := vfs.CheckChownIDs(&c, &s); err != nil {
		return err
	}
	n, err := f.get(h)
	if err != nil {
		return err
	}
	defer f.put(n)
	a, err := f.attr(n)
	if err != nil {
		return err
	}
	if s.Size != nil {
		if err := vfs.CheckRegular(a.Type, "truncate"); err != nil {
			return err
		}
	}
	p, done, err := f.perm(&c)
	if err != nil {
		return err
	}
	defer done()
	var stx C.struct_ceph_statx
	var mask C.int
	mode, modeSet := a.Mode, false
	if s.Mode != nil && a.Type != vfs.TypeLnk {
		mode, modeSet = *s.Mode&0o7777, true
	}
	if s.UID != nil {
		stx.stx_uid, mask = C.uint32_t(*s.UID), mask|C.CEPH_SETATTR_UID
	}
	if s.GID != nil {
		stx.stx_gid, mask = C.uint32_t(*s.GID), mask|C.CEPH_SETATTR_GID
	}
	// chown of a non-directory clears set-user-ID, and set-group-ID with
	// group execute, whoever does it (the kernel's ATTR_KILL_S*ID), and
	// so does a truncation by anybody but root. libcephfs does neither:
	// the FS does it after the change, as the server.
	kill := !modeSet && killPriv(mode) != mode &&
		(mask&(C.CEPH_SETATTR_UID|C.CEPH_SETATTR_GID) != 0 && a.Type != vfs.TypeDir && a.Type != vfs.TypeLnk ||
			s.Size != nil && c.UID != 0)
	if modeSet {
		stx.stx_mode, mask = C.uint16_t(mode), mask|C.CEPH_SETATTR_MODE
	}
	if s.Size != nil {
		stx.stx_size, mask = C.uint64_t(*s.Size), mask|C.CEPH_SETATTR_SIZE
	}
	// *_NOW: libcephfs checks write permission instead of ownership but
	// takes the time from stx (Pacific), so it is filled in.
	now := timespec(time.Now())
	switch {
	case s.AtimeNow:
		stx.stx_atime = now
		mask |= C.CEPH_SETATTR_ATIME | C.CEPH_SETATTR_ATIME_NOW
	case s.Atime != nil:
		stx.stx_atime = timespec(*s.Atime)
		mask |= C.CEPH_SETATTR_ATIME
	}
	switch {
	case s.MtimeNow:
		stx.stx_mtime = now
		mask |= C.CEPH_SETATTR_MTIME | C.CEPH_SETATTR_MTIME_NOW
	case s.Mtime != nil:
		stx.stx_mtime = timespec(*s.Mtime)
		mask |= C.CEPH_SETATTR_MTIME
	}
	if mask == 0 {
		return nil
	}
	f.calls.add(callSetattr)
	if r := C.ceph_ll_setattr(f.m, n.in, &stx, mask, p); r < 0 {
		return perr("setattr", r)
	}
	if kill {
		kx := C.struct_ceph_statx{stx_mode: C.uint16_t(killPriv(mode))}
		f.calls.add(callSetattr)
		if r := C.ceph_ll_setattr(f.m, n.in, &kx, C.CEPH_SETATTR_MODE, f.rootPerm); r < 0 {
			return perr("setattr: clearing set-id bits", r)
		}
	}
	return nil
}

func timespec(t time.Time) C.struct_timespec {
	return C.struct_timespec{tv_sec: C.time_t(t.Unix()), tv_nsec: C.long(t.Nanosecond())}
}

// Lookup finds name in dir as c.
func (f *FS) Lookup(c vfs.Cred, dir vfs.Handle, name string) (vfs.Handle, vfs.Attr, error) {
	if err := f.enter(); err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.leave()
	if name != "." && name != ".." {
		if err := vfs.CheckName("lookup", name); err != nil {
			return nil, vfs.Attr{}, err
		}
	}
	d, err := f.get(dir)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.put(d)
	if d.typ != vfs.TypeDir {
		return nil, vfs.Attr{}, &os.PathError{Op: "lookup", Path: name, Err: syscall.ENOTDIR}
	}
	p, done, err := f.perm(&c)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer done()
	lname := name
	if name == ".." && d == f.root {
		lname = "." // ".." of the export root is the root
	}
	cs := C.CString(lname)
	defer C.free(unsafe.Pointer(cs))
	var in *C.struct_Inode
	var stx C.struct_ceph_statx
	f.calls.add(callLookup)
	if r := C.ceph_ll_lookup(f.m, d.in, cs, &in, &stx, wantAttr, 0, p); r < 0 {
		return nil, vfs.Attr{}, perr("lookup", r)
	}
	return f.made(in, &stx)
}

// made caches a new reference from a lookup or create and returns its
// handle and attributes.
func (f *FS) made(in *C.struct_Inode, stx *C.struct_ceph_statx) (vfs.Handle, vfs.Attr, error) {
	a := f.toAttr(stx)
	v := Vino{uint64(stx.stx_ino), NoSnap}
	n := f.insert(v, in, a.Type)
	h := vfs.Handle(n.handle) // a fresh copy: no second HMAC
	f.put(n)
	return h, a, nil
}

// ReadLink returns a symbolic link's target.
func (f *FS) ReadLink(h vfs.Handle) (string, error) {
	if err := f.enter(); err != nil {
		return "", err
	}
	defer f.leave()
	n, err := f.get(h)
	if err != nil {
		return "", err
	}
	defer f.put(n)
	if n.typ != vfs.TypeLnk {
		return "", &os.PathError{Op: "readlink", Err: syscall.EINVAL}
	}
	buf := make([]byte, 4096)
	r := C.ceph_ll_readlink(f.m, n.in, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), f.rootPerm)
	if r < 0 {
		return "", perr("readlink", r)
	}
	return string(buf[:r]), nil
}

// fh returns n's open file for reading (write false) or reading and
// writing, opening it as the server on first use.
func (f *FS) fh(n *node, write bool) (*C.struct_Fh, error) {
	n.fhMu.Lock()
	defer n.fhMu.Unlock()
	slot, flags := &n.rfh, C.int(C.O_RDONLY)
	if write {
		slot, flags = &n.wfh, C.O_RDWR
	}
	if *slot != nil {
		return *slot, nil
	}
	if !write && n.wfh != nil {
		return n.wfh, nil
	}
	var fh *C.struct_Fh
	f.calls.add(callOpen)
	if r := C.ceph_ll_open(f.m, n.in, flags, &fh, f.rootPerm); r < 0 {
		return nil, perr("open", r)
	}
	*slot = fh
	return fh, nil
}

// ReadAt reads into p from off, straight into p.
func (f *FS) ReadAt(h vfs.Handle, p []byte, off int64) (int, bool, error) {
	n, eof, _, err := f.ReadAtAttr(h, p, off)
	return n, eof, err
}

// ReadAtAttr is ReadAt that also returns h's attributes (vfs.AttrReader):
// the one getattr a READ costs serves both the end-of-file test and the
// reply's attributes, and it also finds a file whose last link is gone
// (stale). The data goes straight into p.
func (f *FS) ReadAtAttr(h vfs.Handle, p []byte, off int64) (int, bool, vfs.Attr, error) {
	if err := f.enter(); err != nil {
		return 0, false, vfs.Attr{}, err
	}
	defer f.leave()
	n, err := f.get(h)
	if err != nil {
		return 0, false, vfs.Attr{}, err
	}
	defer f.put(n)
	if err := vfs.CheckRegular(n.typ, "read"); err != nil {
		return 0, false, vfs.Attr{}, err
	}
	if off < 0 {
		return 0, false, vfs.Attr{}, &os.PathError{Op: "read", Err: syscall.EINVAL}
	}
	a, err := f.attr(n)
	if err != nil {
		return 0, false, vfs.Attr{}, err
	}
	if len(p) == 0 {
		return 0, false, a, nil
	}
	fh, err := f.fh(n, false)
	if err != nil {
		return 0, false, vfs.Attr{}, err
	}
	f.calls.add(callRead)
	r := C.ceph_ll_read(f.m, fh, C.int64_t(off), C.uint64_t(len(p)), (*C.char)(unsafe.Pointer(&p[0])))
	if r < 0 {
		return 0, false, vfs.Attr{}, perr("read", r)
	}
	got := int(r)
	eof := uint64(off)+uint64(got) >= a.Size
	if got < len(p) {
		eof = true
	}
	return got, eof, a, nil
}

// WriteAt writes p at off as c; with sync, data and metadata are on the
// OSDs and MDS before it returns.
func (f *FS) WriteAt(c vfs.Cred, h vfs.Handle, p []byte, off int64, sync bool) (int, error) {
	n, _, err := f.WriteAtAttr(c, h, p, off, sync)
	return n, err
}

// WriteAtAttr is WriteAt that also returns h's attributes after the
// write (vfs.AttrWriter): one getattr, after the data, serves the reply
// and the set-id rule (a file with neither bit, the usual case, needs no
// more). A file whose last link went before the write (another head
// removed it; what this head wrote went to a file nobody can open again)
// is stale.
func (f *FS) WriteAtAttr(c vfs.Cred, h vfs.Handle, p []byte, off int64, sync bool) (int, vfs.Attr, error) {
	if err := f.enter(); err != nil {
		return 0, vfs.Attr{}, err
	}
	defer f.leave()
	if !c.Valid() {
		return 0, vfs.Attr{}, &os.PathError{Op: "write", Err: syscall.EINVAL}
	}
	n, err := f.get(h)
	if err != nil {
		return 0, vfs.Attr{}, err
	}
	defer f.put(n)
	if err := vfs.CheckRegular(n.typ, "write"); err != nil {
		return 0, vfs.Attr{}, err
	}
	if off < 0 {
		return 0, vfs.Attr{}, &os.PathError{Op: "write", Err: syscall.EINVAL}
	}
	fh, err := f.fh(n, true)
	if err != nil {
		return 0, vfs.Attr{}, err
	}
	var r C.int
	if len(p) > 0 {
		f.calls.add(callWrite)
		r = C.ceph_ll_write(f.m, fh, C.int64_t(off), C.uint64_t(len(p)), (*C.char)(unsafe.Pointer(&p[0])))
		if r < 0 {
			return 0, vfs.Attr{}, perr("write", r)
		}
	}
	a, err := f.attr(n)
	if err != nil {
		return int(r), vfs.Attr{}, err
	}
	// A write by anybody but root clears set-user-ID and set-group-ID
	// (libcephfs writes through a descriptor the server opened, so the
	// FS applies the kernel's rule itself, after the data).
	if c.UID != 0 && killPriv(a.Mode) != a.Mode {
		stx := C.struct_ceph_statx{stx_mode: C.uint16_t(killPriv(a.Mode))}
		f.calls.add(callSetattr)
		if e := C.ceph_ll_setattr(f.m, n.in, &stx, C.CEPH_SETATTR_MODE, f.rootPerm); e < 0 {
			return int(r), vfs.Attr{}, perr("write: clearing set-id bits", e)
		}
		if a, err = f.attr(n); err != nil {
			return int(r), vfs.Attr{}, err
		}
	}
	if sync {
		f.calls.add(callSync)
		if e := C.ceph_ll_fsync(f.m, fh, 0); e < 0 {
			return int(r), vfs.Attr{}, perr("fsync", e)
		}
	}
	return int(r), a, nil
}

// Commit flushes h's data and metadata.
func (f *FS) Commit(h vfs.Handle) error {
	if err := f.enter(); err != nil {
		return err
	}
	defer f.leave()
	n, err := f.get(h)
	if err != nil {
		return err
	}
	defer f.put(n)
	f.calls.add(callSync)
	if r := C.ceph_ll_sync_inode(f.m, n.in, 0); r < 0 {
		return perr("fsync", r)
	}
	return nil
}

// dirOp resolves dir and c for a method that changes dir's entry name,
// and holds dir's name lock shared (nameLocks) until done is called.
func (f *FS) dirOp(c *vfs.Cred, dir vfs.Handle, op, name string) (*node, *C.UserPerm, *C.char, func(), error) {
	d, p, cs, release, err := f.dirOpUnlocked(c, dir, op, name)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	unlock := f.names.share(d.vino)
	return d, p, cs, func() {
		unlock()
		release()
	}, nil
}

// dirOpUnlocked is dirOp without the name lock (Rename takes its own).
func (f *FS) dirOpUnlocked(c *vfs.Cred, dir vfs.Handle, op, name string) (*node, *C.UserPerm, *C.char, func(), error) {
	if err := vfs.CheckName(op, name); err != nil {
		return nil, nil, nil, nil, err
	}
	d, err := f.get(dir)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	p, done, err := f.perm(c)
	if err != nil {
		f.put(d)
		return nil, nil, nil, nil, err
	}
	if d.typ != vfs.TypeDir {
		f.put(d)
		done()
		return nil, nil, nil, nil, &os.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
	}
	cs := C.CString(name)
	return d, p, cs, func() {
		C.free(unsafe.Pointer(cs))
		done()
		f.put(d)
	}, nil
}

// Create makes a regular file owned by c.
func (f *FS) Create(c vfs.Cred, dir vfs.Handle, name string, mode uint32, guarded, exclusive bool, verf [8]byte) (vfs.Handle, vfs.Attr, error) {
	if err := f.enter(); err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.leave()
	d, p, cs, done, err := f.dirOp(&c, dir, "create", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer done()
	mode &= 0o7777
	// The create comes first (a new name, the common case, costs one MDS
	// request); a name that exists is then looked up.
	for range 4 {
		var in *C.struct_Inode
		var fh *C.struct_Fh
		var stx C.struct_ceph_statx
		f.calls.add(callCreate)
		r := C.ceph_ll_create(f.m, d.in, cs, C.mode_t(mode|syscall.S_IFREG), C.O_CREAT|C.O_EXCL|C.O_RDWR|C.O_NOFOLLOW,
			&in, &fh, &stx, wantAttr, 0, p)
		if r == 0 {
			return f.created(&c, in, fh, &stx, mode, exclusive, verf, p)
		}
		if syscall.Errno(-r) != syscall.EEXIST || guarded && !exclusive {
			return nil, vfs.Attr{}, perr("create", r)
		}
		f.calls.add(callLookup)
		r = C.ceph_ll_lookup(f.m, d.in, cs, &in, &stx, wantAttr, C.AT_SYMLINK_NOFOLLOW, p)
		if syscall.Errno(-r) == syscall.ENOENT {
			continue // removed since: create again
		}
		if r < 0 {
			return nil, vfs.Attr{}, perr("create", r)
		}
		a := f.toAttr(&stx)
		if exclusive {
			at, mt := vfs.ExclusiveTimes(verf)
			if a.Type != vfs.TypeReg || a.Size != 0 || a.Atime.Unix() != at || a.Mtime.Unix() != mt ||
				a.Atime.Nanosecond() != 0 || a.Mtime.Nanosecond() != 0 {
				C.ceph_ll_put(f.m, in)
				return nil, vfs.Attr{}, vfs.ErrExclusiveMismatch
			}
			return f.made(in, &stx)
		}
		if a.Type != vfs.TypeReg {
			C.ceph_ll_put(f.m, in)
			return nil, vfs.Attr{}, &os.PathError{Op: "create", Path: name, Err: syscall.EEXIST}
		}
		return f.made(in, &stx)
	}
	return nil, vfs.Attr{}, &os.PathError{Op: "create", Path: name, Err: syscall.EAGAIN}
}

// created finishes a Create that made in: the exact mode, the EXCLUSIVE
// verifier, and the node cached with the create's open file kept as its
// read-write one (the client's WRITEs follow).
func (f *FS) created(c *vfs.Cred, in *C.struct_Inode, fh *C.struct_Fh, stx *C.struct_ceph_statx, mode uint32, exclusive bool, verf [8]byte, p *C.UserPerm) (vfs.Handle, vfs.Attr, error) {
	fail := func(err error) (vfs.Handle, vfs.Attr, error) {
		if fh != nil {
			f.calls.add(callClose)
			C.ceph_ll_close(f.m, fh)
		}
		C.ceph_ll_put(f.m, in)
		return nil, vfs.Attr{}, err
	}
	if err := f.exactMode(in, stx, newFileMode(c, stx, mode), p); err != nil {
		return fail(err)
	}
	if exclusive {
		at, mt := vfs.ExclusiveTimes(verf)
		tx := C.struct_ceph_statx{stx_atime: C.struct_timespec{tv_sec: C.time_t(at)}, stx_mtime: C.struct_timespec{tv_sec: C.time_t(mt)}}
		f.calls.add(callSetattr)
		if r := C.ceph_ll_setattr(f.m, in, &tx, C.CEPH_SETATTR_ATIME|C.CEPH_SETATTR_MTIME, f.rootPerm); r < 0 {
			return fail(perr("create: verifier", r))
		}
		f.calls.add(callGetattr)
		if r := C.ceph_ll_getattr(f.m, in, stx, wantAttr, 0, f.rootPerm); r < 0 {
			return fail(perr("getattr", r))
		}
	}
	a := f.toAttr(stx)
	v := Vino{uint64(stx.stx_ino), NoSnap}
	n := f.insert(v, in, a.Type)
	if fh != nil {
		n.fhMu.Lock()
		if n.wfh == nil {
			n.wfh, fh = fh, nil
		}
		n.fhMu.Unlock()
		if fh != nil {
			f.calls.add(callClose)
			C.ceph_ll_close(f.m, fh)
		}
	}
	h := vfs.Handle(n.handle) // a fresh copy: no second HMAC
	f.put(n)
	return h, a, nil
}

// newFileMode is the mode a new non-directory gets for mode: without
// set-group-ID when it is group-executable, its group (inherited from a
// set-group-ID directory) is not one of the creator's and the creator is
// not root, as the kernel's inode_init_owner.
func newFileMode(c *vfs.Cred, stx *C.struct_ceph_statx, mode uint32) uint32 {
	if mode&(syscall.S_ISGID|0o010) == syscall.S_ISGID|0o010 && c.UID != 0 && !c.InGroup(uint32(stx.stx_gid)) {
		mode &^= syscall.S_ISGID
	}
	return mode
}

// exactMode gives a new object exactly mode where creation took bits away
// (as the caller, so the set-group-ID rules apply), and refreshes stx.
func (f *FS) exactMode(in *C.struct_Inode, stx *C.struct_ceph_statx, mode uint32, p *C.UserPerm) error {
	if uint32(stx.stx_mode)&0o7777 == mode {
		return nil
	}
	tx := C.struct_ceph_statx{stx_mode: C.uint16_t(mode)}
	f.calls.add(callSetattr)
	if r := C.ceph_ll_setattr(f.m, in, &tx, C.CEPH_SETATTR_MODE, p); r < 0 {
		return perr("chmod", r)
	}
	f.calls.add(callGetattr)
	if r := C.ceph_ll_getattr(f.m, in, stx, wantAttr, 0, f.rootPerm); r < 0 {
		return perr("getattr", r)
	}
	return nil
}

// Mkdir makes a directory owned by c.
func (f *FS) Mkdir(c vfs.Cred, dir vfs.Handle, name string, mode uint32) (vfs.Handle, vfs.Attr, error) {
	if err := f.enter(); err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.leave()
	d, p, cs, done, err := f.dirOp(&c, dir, "mkdir", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer done()
	var in *C.struct_Inode
	var stx C.struct_ceph_statx
	if r := C.ceph_ll_mkdir(f.m, d.in, cs, C.mode_t(mode&0o7777), &in, &stx, wantAttr, 0, p); r < 0 {
		return nil, vfs.Attr{}, perr("mkdir", r)
	}
	want := mode & 0o7777
	if d.typ == vfs.TypeDir && uint32(stx.stx_mode)&syscall.S_ISGID != 0 {
		want |= syscall.S_ISGID // inherited from a set-group-ID parent
	}
	if err := f.exactMode(in, &stx, want, p); err != nil {
		C.ceph_ll_put(f.m, in)
		return nil, vfs.Attr{}, err
	}
	return f.made(in, &stx)
}

// Symlink makes a symbolic link to target owned by c (mode 0777).
func (f *FS) Symlink(c vfs.Cred, dir vfs.Handle, name, target string, mode uint32) (vfs.Handle, vfs.Attr, error) {
	if err := f.enter(); err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.leave()
	d, p, cs, done, err := f.dirOp(&c, dir, "symlink", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer done()
	if target == "" {
		return nil, vfs.Attr{}, &os.PathError{Op: "symlink", Path: name, Err: syscall.ENOENT}
	}
	if len(target) >= 4096 || containsNUL(target) {
		return nil, vfs.Attr{}, &os.PathError{Op: "symlink", Path: name, Err: syscall.ENAMETOOLONG}
	}
	ct := C.CString(target)
	defer C.free(unsafe.Pointer(ct))
	var in *C.struct_Inode
	var stx C.struct_ceph_statx
	if r := C.ceph_ll_symlink(f.m, d.in, cs, ct, &in, &stx, wantAttr, 0, p); r < 0 {
		return nil, vfs.Attr{}, perr("symlink", r)
	}
	return f.made(in, &stx)
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// Mknod makes a FIFO, socket or device node owned by c.
func (f *FS) Mknod(c vfs.Cred, dir vfs.Handle, name string, typ vfs.FileType, mode uint32, major, minor uint32) (vfs.Handle, vfs.Attr, error) {
	if err := f.enter(); err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.leave()
	var ifmt uint32
	switch typ {
	case vfs.TypeFIFO:
		ifmt, major, minor = syscall.S_IFIFO, 0, 0
	case vfs.TypeSock:
		ifmt, major, minor = syscall.S_IFSOCK, 0, 0
	case vfs.TypeChr:
		ifmt = syscall.S_IFCHR
	case vfs.TypeBlk:
		ifmt = syscall.S_IFBLK
	default:
		return nil, vfs.Attr{}, &os.PathError{Op: "mknod", Path: name, Err: syscall.EINVAL}
	}
	d, p, cs, done, err := f.dirOp(&c, dir, "mknod", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer done()
	// Device nodes need CAP_MKNOD, which nobody but root has; libcephfs
	// does not check it.
	// An existing name is EEXIST first, as in the kernel.
	if (typ == vfs.TypeChr || typ == vfs.TypeBlk) && c.UID != 0 {
		var in *C.struct_Inode
		var stx C.struct_ceph_statx
		f.calls.add(callLookup)
		r := C.ceph_ll_lookup(f.m, d.in, cs, &in, &stx, C.CEPH_STATX_INO, C.AT_SYMLINK_NOFOLLOW, p)
		if r == 0 {
			C.ceph_ll_put(f.m, in)
			return nil, vfs.Attr{}, &os.PathError{Op: "mknod", Path: name, Err: syscall.EEXIST}
		}
		if syscall.Errno(-r) != syscall.ENOENT {
			return nil, vfs.Attr{}, perr("mknod", r)
		}
		return nil, vfs.Attr{}, &os.PathError{Op: "mknod", Path: name, Err: syscall.EPERM}
	}
	var in *C.struct_Inode
	var stx C.struct_ceph_statx
	if r := C.ceph_ll_mknod(f.m, d.in, cs, C.mode_t(mode&0o7777|ifmt), C.gcf_makedev(C.uint(major), C.uint(minor)), &in, &stx, wantAttr, 0, p); r < 0 {
		return nil, vfs.Attr{}, perr("mknod", r)
	}
	if err := f.exactMode(in, &stx, newFileMode(&c, &stx, mode&0o7777), p); err != nil {
		C.ceph_ll_put(f.m, in)
		return nil, vfs.Attr{}, err
	}
	return f.made(in, &stx)
}

// victim returns the object dir's name names (as the server, for the
// cache), or ok false.
func (f *FS) victim(d *node, cs *C.char) (Vino, bool) {
	var in *C.struct_Inode
	var stx C.struct_ceph_statx
	f.calls.add(callLookup)
	if r := C.ceph_ll_lookup(f.m, d.in, cs, &in, &stx, C.CEPH_STATX_INO, C.AT_SYMLINK_NOFOLLOW, f.rootPerm); r < 0 {
		return Vino{}, false
	}
	C.ceph_ll_put(f.m, in)
	return Vino{uint64(stx.stx_ino), NoSnap}, true
}

// lookupAs looks cs up in d as p (for its permission check).
func (f *FS) lookupAs(d *node, cs *C.char, p *C.UserPerm) (Vino, vfs.FileType, error) {
	var in *C.struct_Inode
	var stx C.struct_ceph_statx
	f.calls.add(callLookup)
	if r := C.ceph_ll_lookup(f.m, d.in, cs, &in, &stx, C.CEPH_STATX_INO|C.CEPH_STATX_MODE, C.AT_SYMLINK_NOFOLLOW, p); r < 0 {
		return Vino{}, 0, perr("lookup", r)
	}
	C.ceph_ll_put(f.m, in)
	return Vino{uint64(stx.stx_ino), NoSnap}, modeType(uint32(stx.stx_mode)), nil
}

// Remove unlinks a non-directory as c.
func (f *FS) Remove(c vfs.Cred, dir vfs.Handle, name string) error {
	if err := f.enter(); err != nil {
		return err
	}
	defer f.leave()
	d, p, cs, done, err := f.dirOp(&c, dir, "remove", name)
	if err != nil {
		return err
	}
	defer done()
	v, had := f.victim(d, cs)
	f.calls.add(callUnlink)
	if r := C.ceph_ll_unlink(f.m, d.in, cs, p); r < 0 {
		return perr("remove", r)
	}
	if had {
		f.evict(v)
	}
	return nil
}

// Rmdir removes an empty directory as c.
func (f *FS) Rmdir(c vfs.Cred, dir vfs.Handle, name string) error {
	if err := f.enter(); err != nil {
		return err
	}
	defer f.leave()
	d, p, cs, done, err := f.dirOp(&c, dir, "rmdir", name)
	if err != nil {
		return err
	}
	defer done()
	v, had := f.victim(d, cs)
	if r := C.ceph_ll_rmdir(f.m, d.in, cs, p); r < 0 {
		return perr("rmdir", r)
	}
	if had {
		f.evict(v)
	}
	return nil
}

// Rename moves fromName in fromDir to toName in toDir as c.
func (f *FS) Rename(c vfs.Cred, fromDir vfs.Handle, fromName string, toDir vfs.Handle, toName string) error {
	if err := f.enter(); err != nil {
		return err
	}
	defer f.leave()
	if err := vfs.CheckName("rename", toName); err != nil {
		return err
	}
	d, p, cs, done, err := f.dirOpUnlocked(&c, fromDir, "rename", fromName)
	if err != nil {
		return err
	}
	defer done()
	td, err := f.get(toDir)
	if err != nil {
		return err
	}
	defer f.put(td)
	if td.typ != vfs.TypeDir {
		return &os.PathError{Op: "rename", Path: toName, Err: syscall.ENOTDIR}
	}
	// Both parents' entries stay as looked up below until the rename is
	// made (nameLocks). The locks are released once it is, before the
	// slow refreshDirStat: nothing after that depends on the entries.
	unlock := f.names.exclude(d.vino, td.vino)
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	ct := C.CString(toName)
	defer C.free(unsafe.Pointer(ct))
	src, srcOK := f.victim(d, cs)
	if !srcOK {
		// Never ceph_ll_rename a missing source: Pacific's libcephfs
		// (16.2.15) marks the target's cached dentry as being renamed,
		// fails on the source and leaves the mark, and every later
		// lookup of the target name waits for it forever
		// (TestRenameMissingSourceLeavesTargetUsable). The caller's own
		// lookup gives the caller's error: EACCES without search
		// permission, else ENOENT.
		if _, _, err := f.lookupAs(d, cs, p); err != nil {
			return err
		}
		return &os.PathError{Op: "rename", Path: fromName, Err: syscall.ENOENT}
	}
	v, had := f.victim(td, ct)
	if had && src == v {
		// The same object under both names (the same name, or two hard
		// links): rename(2) does nothing. libcephfs would unlink it.
		if _, _, err := f.lookupAs(d, cs, p); err != nil {
			return err
		}
		return nil
	}
	if td != d && c.UID != 0 {
		// Moving a directory to a new parent rewrites its "..": the
		// kernel wants write permission on it, libcephfs does not check.
		// An object that cannot be examined is not moved.
		sn, err := f.get(f.codec.encode(src))
		if err != nil {
			return err
		}
		a, err := f.attr(sn)
		f.put(sn)
		if err != nil {
			return err
		}
		if a.Type == vfs.TypeDir && !c.May(&a, vfs.MayWrite) {
			return &os.PathError{Op: "rename", Path: fromName, Err: syscall.EACCES}
		}
	}
	if r := C.ceph_ll_rename(f.m, d.in, cs, td.in, ct, p); r < 0 {
		return perr("rename", r)
	}
	if td != d {
		// libcephfs keeps the old parent's modification and change times
		// from before the move (it holds the directory's exclusive file
		// capability and leaves updating them to itself): set them, as the
		// move did on the MDS. Still under the lock (a local update through
		// that capability), so a change of the old parent's entries made
		// right after the rename does not get an older time from here.
		now := timespec(time.Now())
		tx := C.struct_ceph_statx{stx_mtime: now, stx_ctime: now}
		f.calls.add(callSetattr)
		C.ceph_ll_setattr(f.m, d.in, &tx, C.CEPH_SETATTR_MTIME|C.CEPH_SETATTR_CTIME, f.rootPerm)
	}
	// What follows is keyed by inode, not by name: dropping the replaced
	// target's cached node and refreshing the old parent's link count
	// are right whatever the parents' entries have become since, so the
	// parents' other changes need not wait for them (refreshDirStat
	// costs a mount and an unmount, about a second).
	unlock()
	locked = false
	if had && v != src {
		f.evict(v)
	}
	if td != d {
		if sn, err := f.get(f.codec.encode(src)); err == nil {
			if sn.typ == vfs.TypeDir {
				f.refreshDirStat(d.vino)
			}
			f.put(sn)
		}
	}
	return nil
}

// refreshDirStat makes the FS's link count of directory v current after
// a subdirectory moved out of it. libcephfs, holding the directory's
// exclusive file capability, keeps the count from before the move and
// ignores the MDS's (a Pacific client limitation; other clients see the
// right one). A getattr of v through a second mount makes the MDS take
// that capability back, which brings the current count with it.
func (f *FS) refreshDirStat(v Vino) {
	if f.refreshHook != nil {
		f.refreshHook(v)
	}
	f.obsMu.Lock()
	defer f.obsMu.Unlock()
	if f.obs == nil {
		var m *C.struct_ceph_mount_info
		if r := C.gcf_create_from_rados(&m, unsafe.Pointer(f.conn.Cluster())); r < 0 {
			f.log.Warn("cephfs: observer mount", zap.Error(cerr(r)))
			return
		}
		if f.fsName != "" {
			cs := C.CString(f.fsName)
			C.ceph_select_filesystem(m, cs)
			C.free(unsafe.Pointer(cs))
		}
		cr := C.CString(f.rootPath)
		r := C.ceph_mount(m, cr)
		C.free(unsafe.Pointer(cr))
		if r < 0 {
			C.ceph_release(m)
			f.log.Warn("cephfs: observer mount", zap.Error(cerr(r)))
			return
		}
		f.obs = m
	}
	var in *C.struct_Inode
	if r := C.gcf_lookup_vino(f.obs, C.uint64_t(v.Ino), C.uint64_t(v.Snap), &in); r < 0 {
		return
	}
	var stx C.struct_ceph_statx
	C.ceph_ll_getattr(f.obs, in, &stx, wantAttr, 0, f.rootPerm)
	C.ceph_ll_put(f.obs, in)
	// The capability comes back to the main mount only once the
	// observer's session ends (measured: keeping it mounted leaves the
	// stale count), so each refresh costs a mount and an unmount.
	C.ceph_unmount(f.obs)
	C.ceph_release(f.obs)
	f.obs = nil
}

// Link makes a hard link to h named name in dir as c.
func (f *FS) Link(c vfs.Cred, h vfs.Handle, dir vfs.Handle, name string) error {
	if err := f.enter(); err != nil {
		return err
	}
	defer f.leave()
	d, p, cs, done, err := f.dirOp(&c, dir, "link", name)
	if err != nil {
		return err
	}
	defer done()
	n, err := f.get(h)
	if err != nil {
		return err
	}
	defer f.put(n)
	if n.typ == vfs.TypeDir {
		return &os.PathError{Op: "link", Path: name, Err: syscall.EPERM}
	}
	// fs.protected_hardlinks: the caller must own the file or be allowed
	// to read and write it (root may always).
	if c.UID != 0 {
		a, err := f.attr(n)
		if err != nil {
			return err
		}
		if a.UID != c.UID && (a.Type != vfs.TypeReg || a.Mode&(syscall.S_ISUID) != 0 ||
			a.Mode&(syscall.S_ISGID|0o010) == syscall.S_ISGID|0o010 || !c.May(&a, vfs.MayRead|vfs.MayWrite)) {
			return &os.PathError{Op: "link", Path: name, Err: syscall.EPERM}
		}
	}
	if r := C.ceph_ll_link(f.m, n.in, d.in, cs, p); r < 0 {
		return perr("link", r)
	}
	return nil
}

// maxCookie bounds the positions libcephfs issues (dir_result_t's fpos:
// frag and offset, and the hash-order flag in bit 60).
const maxCookie = 1<<61 - 1

// ReadDir lists dir after cookie (see doc.go, "ReadDir cookies").
func (f *FS) ReadDir(dir vfs.Handle, cookie, verf uint64, max int) ([]vfs.DirEntry, uint64, bool, error) {
	if err := f.enter(); err != nil {
		return nil, 0, false, err
	}
	defer f.leave()
	d, err := f.get(dir)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.put(d)
	if d.typ != vfs.TypeDir {
		return nil, 0, false, &os.PathError{Op: "readdir", Err: syscall.ENOTDIR}
	}
	if max <= 0 {
		return nil, 0, false, &os.PathError{Op: "readdir", Err: syscall.EINVAL}
	}
	if cookie > maxCookie || (cookie != 0 && verf != 0 && verf != cookieVerf) {
		return nil, 0, false, vfs.ErrBadCookie
	}
	var dp *C.struct_ceph_dir_result
	if r := C.ceph_ll_opendir(f.m, d.in, &dp, f.rootPerm); r < 0 {
		return nil, 0, false, perr("opendir", r)
	}
	defer C.ceph_ll_releasedir(f.m, dp)
	if cookie != 0 {
		C.ceph_seekdir(f.m, dp, C.int64_t(cookie))
	}
	if max > 4096 {
		max = 4096
	}
	capNames := max * (vfs.MaxName + 1)
	names := C.malloc(C.size_t(capNames))
	defer C.free(names)
	inos := make([]uint64, max)
	cookies := make([]int64, max)
	var eof C.int
	r := C.gcf_read_dir(f.m, dp, C.int(max), (*C.char)(names), C.size_t(capNames),
		(*C.uint64_t)(unsafe.Pointer(&inos[0])), (*C.int64_t)(unsafe.Pointer(&cookies[0])), &eof)
	if r < 0 {
		return nil, 0, false, perr("readdir", r)
	}
	nb := unsafe.Slice((*byte)(names), capNames)
	out := make([]vfs.DirEntry, 0, int(r))
	pos := 0
	for i := 0; i < int(r); i++ {
		end := pos
		for nb[end] != 0 {
			end++
		}
		name := string(nb[pos:end])
		pos = end + 1
		id := inos[i]
		if name == ".." && d == f.root {
			id = f.root.vino.Ino
		}
		out = append(out, vfs.DirEntry{Name: name, FileID: id, Cookie: uint64(cookies[i])})
	}
	return out, cookieVerf, eof != 0, nil
}

// FSStat reports the cluster's space (libcephfs statfs: the data pools'
// share of the cluster) and file counts.
func (f *FS) FSStat() (vfs.FSStat, error) {
	if err := f.enter(); err != nil {
		return vfs.FSStat{}, err
	}
	defer f.leave()
	var st C.struct_statvfs
	if r := C.ceph_ll_statfs(f.m, f.root.in, &st); r < 0 {
		return vfs.FSStat{}, perr("statfs", r)
	}
	bs := uint64(st.f_frsize)
	s := vfs.FSStat{
		TotalBytes: uint64(st.f_blocks) * bs,
		FreeBytes:  uint64(st.f_bfree) * bs,
		AvailBytes: uint64(st.f_bavail) * bs,
		TotalFiles: uint64(st.f_files),
		FreeFiles:  uint64(st.f_ffree),
		AvailFiles: uint64(st.f_favail),
	}
	return fileCounts(s), nil
}

// Close releases every inode and open file and unmounts.
func (f *FS) Close() error {
	f.life.Lock()
	defer f.life.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	f.mu.Lock()
	all := make([]*node, 0, len(f.nodes))
	for _, n := range f.nodes {
		all = append(all, n)
	}
	f.nodes = map[Vino]*node{}
	f.byHandle = map[string]*node{}
	f.lru.Init()
	f.mu.Unlock()
	for _, n := range all {
		f.releaseNode(n)
	}
	var err error
	if r := C.ceph_unmount(f.m); r < 0 {
		err = fmt.Errorf("cephfs: unmount: %w", cerr(r))
	}
	C.ceph_release(f.m)
	C.ceph_userperm_destroy(f.rootPerm)
	if f.grace != nil {
		f.grace.close()
	}
	f.conn.Shutdown()
	return err
}

var (
	_ vfs.FS         = (*FS)(nil)
	_ vfs.AttrReader = (*FS)(nil)
	_ vfs.AttrWriter = (*FS)(nil)
)
