package localfs

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Descriptor ownership: the FS owns every descriptor it opens. Those
// naming files live in the fdCache (see fdcache_linux.go); the export
// root's descriptor is a pinned cache entry that doubles as the mount
// descriptor for open_by_handle_at. Descriptors opened for one call
// (ReadDir's directory stream, the ".." walk) are closed before it
// returns. Handles returned to callers are fresh slices the caller owns;
// handles passed in are only read during the call.

// Options configures New.
type Options struct {
	// Logger receives boundary events (key creation, close errors). Nil
	// means no logging.
	Logger *zap.Logger
	// MaxOpenFiles bounds the open-file cache (entries, each holding one
	// to three descriptors). Zero means 1024.
	MaxOpenFiles int
	// SweepInterval is how often the open-file cache looks for cached
	// objects whose last link another process removed and closes their
	// descriptors, so their blocks are freed without waiting for a client
	// to touch their handles (one fstat per idle cached entry; see
	// BenchmarkSweep1024 for the cost). Zero means DefaultSweepInterval
	// (2 s); negative is refused by New.
	SweepInterval time.Duration
	// HandleKey, when at least 16 bytes, is the secret that authenticates
	// handles; handles stay valid across restarts only if it does not
	// change. When empty, the key is read from the export root's
	// extended attribute KeyXattr, created with 32 random bytes on
	// first use (trusted.* attributes are readable only with
	// CAP_SYS_ADMIN and travel with the directory).
	HandleKey []byte
	// HandleDomain is bound into every handle's authenticator (HMAC of
	// HandleDomain, then the handle). The NFS server passes the export's
	// fsid with a label (nfs.HandleDomain), so that
	// a handle of one export relabelled with another's fsid fails
	// authentication even when both share HandleKey. Empty: no domain.
	HandleDomain []byte
	// NameCookies makes ReadDir cookies from names (a keyed hash) even on
	// filesystems whose directory offsets are stable (see doc.go).
	NameCookies bool
}

// KeyXattr is the extended attribute of the export root that keeps the
// handle key when Options.HandleKey is empty.
const KeyXattr = "trusted.gonfsrdma.fhkey"

// OS handle layouts (see doc.go). Version 2, issued while the kernel
// handle type fits a byte (every filesystem in Linux uses types below
// 256):
//
//	[0]      kernel handle type
//	[1:1+n]  kernel handle bytes (struct file_handle f_handle)
//	[1+n:]   first osMACLen bytes of HMAC-SHA256(key, domain, 0x02, h[0:1+n])
//
// and version 1, accepted (and issued for a larger type; the only
// layout before version 2):
//
//	[0]      osV1Version
//	[1]      n, the length of the kernel handle
//	[2:6]    kernel handle type, big-endian int32
//	[6:6+n]  kernel handle bytes
//	[6+n:]   first osV1MACLen bytes of HMAC-SHA256(key, domain, h[0:6+n])
//
// Version 2 has its version in its MAC's input, not in its bytes, so
// neither layout's MAC can pass for the other's.
const (
	osV2Tag         = 0x02 // version 2, MACed before the handle
	osV2Header      = 1
	osMACLen        = 6
	osV1Version     = 0x01
	osV1Header      = 6
	osV1MACLen      = 8
	osMaxKernel     = vfs.MaxHandle - osV2Header - osMACLen
	osV1MaxKernel   = vfs.MaxHandle - osV1Header - osV1MACLen
	maxWalkDepth    = 4096
	getdentsBufSize = 32 << 10
)

// FS is the FS over a directory of the host: kernel file handles
// authenticated with a per-export key, *at system calls relative to
// descriptors obtained from handles, and a bounded cache of open files.
type FS struct {
	log        *zap.Logger
	rootFD     int // O_RDONLY|O_DIRECTORY; also the mount fd
	rootDev    uint64
	rootIno    uint64
	rootMount  int
	rootHandle vfs.Handle
	key        []byte
	domain     []byte    // Options.HandleDomain: version-1 handles' MAC domain
	domainV2   []byte    // domain, then osV2Tag: version 2's
	macs       sync.Pool // hash.Hash: HMAC-SHA256 keyed with key, reset
	cache      *fdCache
	moves      moveWatch
	closed     atomic.Bool
	// modePerm says dirGrants may grant directory permissions from mode
	// bits on this FS (modeperm_linux.go); grpid that the mount gives new
	// files their directory's group (ext4's and XFS's grpid option).
	modePerm bool
	grpid    bool
	// serverCreate says createAsServer may make files as the server
	// (servercreate_linux.go); turned off for good when the filesystem
	// makes no O_TMPFILE files.
	serverCreate atomic.Bool
	// noQuotaOps says the filesystem answered quotactl_fd with ENOSYS:
	// its superblock has no quota operations, which are fixed when it is
	// mounted, so quotaLimitsOff need not ask again.
	noQuotaOps atomic.Bool
	bufs       sync.Pool // *[]byte of getdentsBufSize
	dirs       osDirs    // ReadDir cookie scheme and listings (readdir_linux.go)
}

// New exports the existing directory root. It fails when root is not a
// directory, when the filesystem cannot make file handles
// (name_to_handle_at returns EOPNOTSUPP: such filesystems cannot give
// handles that survive restarts and are not supported), or when no handle
// key is available.
func New(root string, opts Options) (*FS, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	max := opts.MaxOpenFiles
	if max <= 0 {
		max = 1024
	}
	sweepEvery := opts.SweepInterval
	if sweepEvery < 0 {
		return nil, fmt.Errorf("vfs: Options.SweepInterval %v is negative", sweepEvery)
	}
	if sweepEvery == 0 {
		sweepEvery = DefaultSweepInterval
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("vfs: export root %q: %w", root, err)
	}
	rfd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: abs, Err: err}
	}
	f := &FS{log: log.With(zap.String("export", abs)), rootFD: rfd, cache: newFDCache(max)}
	f.bufs.New = func() any { b := make([]byte, getdentsBufSize); return &b }
	fail := func(err error) (*FS, error) {
		unix.Close(rfd)
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(rfd, &st); err != nil {
		return fail(&os.PathError{Op: "stat", Path: abs, Err: err})
	}
	f.rootDev, f.rootIno = st.Dev, st.Ino
	fh, mnt, err := unix.NameToHandleAt(rfd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return fail(fmt.Errorf("vfs: export root %s: the filesystem cannot make file handles (name_to_handle_at: %w); it cannot be exported with restart-stable handles", abs, err))
		}
		return fail(&os.PathError{Op: "name_to_handle_at", Path: abs, Err: err})
	}
	f.rootMount = mnt
	f.initModePerm()
	f.initServerCreate()
	f.domain = append([]byte(nil), opts.HandleDomain...)
	f.domainV2 = append(append([]byte(nil), opts.HandleDomain...), osV2Tag)
	if len(opts.HandleKey) > 0 {
		if len(opts.HandleKey) < 16 {
			return fail(fmt.Errorf("vfs: Options.HandleKey must be at least 16 bytes"))
		}
		f.key = append([]byte(nil), opts.HandleKey...)
	} else if f.key, err = f.loadKey(abs); err != nil {
		return fail(err)
	}
	h, err := f.encode(fh)
	if err != nil {
		return fail(fmt.Errorf("vfs: export root %s: %w", abs, err))
	}
	if err := f.dirs.init(rfd, f.key, opts.NameCookies); err != nil {
		return fail(fmt.Errorf("vfs: export root %s: %w", abs, err))
	}
	f.rootHandle = h
	re := &fdEntry{key: string(h), fh: fh, fd: rfd, ino: st.Ino, typ: vfs.TypeDir}
	f.cache.release(f.cache.put(re, true))
	f.moves.start(rfd, func(fd int) bool {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Dev == f.rootDev && st.Ino == f.rootIno {
			return true
		}
		ok, err := f.within(fd, true)
		return ok || err != nil
	}, f.log)
	f.cache.startSweep(sweepEvery)
	return f, nil
}

// loadKey reads or creates the handle key in the root's KeyXattr.
func (f *FS) loadKey(abs string) ([]byte, error) {
	buf := make([]byte, 256)
	for range 3 {
		n, err := unix.Fgetxattr(f.rootFD, KeyXattr, buf)
		if err == nil {
			if n < 16 {
				return nil, fmt.Errorf("vfs: export root %s: handle key in %s is %d bytes, want at least 16", abs, KeyXattr, n)
			}
			return buf[:n:n], nil
		}
		if err != unix.ENODATA {
			return nil, fmt.Errorf("vfs: export root %s: reading handle key %s: %w (set Options.HandleKey on filesystems without trusted xattrs)", abs, KeyXattr, err)
		}
		key := make([]byte, 32)
		rand.Read(key)
		err = unix.Fsetxattr(f.rootFD, KeyXattr, key, unix.XATTR_CREATE)
		if err == nil {
			f.log.Info("created handle key", zap.String("xattr", KeyXattr))
			return key, nil
		}
		if err != unix.EEXIST {
			return nil, fmt.Errorf("vfs: export root %s: storing handle key %s: %w (set Options.HandleKey on filesystems without trusted xattrs)", abs, KeyXattr, err)
		}
	}
	return nil, fmt.Errorf("vfs: export root %s: handle key %s keeps changing", abs, KeyXattr)
}

// mac computes the authenticator of handle prefix b in domain (f.domain
// for version-1 handles, f.domainV2 for version 2) into sum. Keyed HMAC
// states are pooled: making one costs two SHA-256 blocks and four
// allocations, which LOOKUP and CREATE would otherwise pay on every
// call; Reset returns a used one to the keyed state.
func (f *FS) mac(sum *[sha256.Size]byte, domain, b []byte) []byte {
	m, _ := f.macs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, f.key)
	}
	m.Write(domain)
	m.Write(b)
	out := m.Sum(sum[:0])
	m.Reset()
	f.macs.Put(m)
	return out
}

// encode wraps a kernel handle into a vfs handle: version 2, or version 1
// for a type above 255.
func (f *FS) encode(fh unix.FileHandle) (vfs.Handle, error) {
	kb := fh.Bytes()
	if len(kb) == 0 || len(kb) > osMaxKernel {
		return nil, fmt.Errorf("vfs: kernel file handle of %d bytes (at most %d)", len(kb), osMaxKernel)
	}
	if !v2Type(fh.Type()) {
		return f.encodeV1(fh)
	}
	var sum [sha256.Size]byte
	h := make(vfs.Handle, osV2Header, osV2Header+len(kb)+osMACLen)
	h[0] = byte(fh.Type())
	h = append(h, kb...)
	return append(h, f.mac(&sum, f.domainV2, h)[:osMACLen]...), nil
}

// v2Type reports whether a kernel handle type fits version 2's type byte.
func v2Type(typ int32) bool { return typ >= 0 && typ <= 0xff }

// encodeV1 wraps a kernel handle into a version-1 handle: the version
// byte, then the kernel handle as kernelKeyOf lays it out, then the MAC.
func (f *FS) encodeV1(fh unix.FileHandle) (vfs.Handle, error) {
	kb := fh.Bytes()
	if len(kb) == 0 || len(kb) > osV1MaxKernel {
		return nil, fmt.Errorf("vfs: kernel file handle of type %d and %d bytes (at most %d)", fh.Type(), len(kb), osV1MaxKernel)
	}
	var sum [sha256.Size]byte
	h := kernelKeyOf(make(vfs.Handle, 1, osV1Header+len(kb)+osV1MACLen), fh.Type(), kb)
	h[0] = osV1Version
	return append(h, f.mac(&sum, f.domain, h)[:osV1MACLen]...), nil
}

// decode checks a vfs handle and returns its kernel handle. A handle
// that has the shape of version 1 is tried as one first; one that fails
// there is tried as version 2 (a version-2 handle can have that shape).
func (f *FS) decode(h vfs.Handle) (unix.FileHandle, error) {
	var sum [sha256.Size]byte
	shaped := false
	if len(h) > osV1Header+osV1MACLen && h[0] == osV1Version && len(h) == osV1Header+int(h[1])+osV1MACLen {
		shaped = true
		n := int(h[1])
		if hmac.Equal(f.mac(&sum, f.domain, h[:osV1Header+n])[:osV1MACLen], h[osV1Header+n:]) {
			return unix.NewFileHandle(int32(binary.BigEndian.Uint32(h[2:6])), h[osV1Header:osV1Header+n]), nil
		}
	}
	n := len(h) - osV2Header - osMACLen
	if n <= 0 || n > osMaxKernel {
		if shaped {
			return unix.FileHandle{}, vfs.ErrStale
		}
		return unix.FileHandle{}, vfs.ErrBadHandle
	}
	if !hmac.Equal(f.mac(&sum, f.domainV2, h[:osV2Header+n])[:osMACLen], h[osV2Header+n:]) {
		return unix.FileHandle{}, vfs.ErrStale
	}
	return unix.NewFileHandle(int32(h[0]), h[osV2Header:osV2Header+n]), nil
}

// acquire returns the cache entry of h with a reference held; release it
// with f.cache.release.
func (f *FS) acquire(h vfs.Handle) (*fdEntry, error) {
	if f.closed.Load() {
		return nil, fs.ErrClosed
	}
	if e := f.cache.get(h); e != nil {
		if e.ino == f.rootIno {
			return e, nil
		}
		// A cached object may have left the export since it was cached
		// (moved out on the server): the same check as a fresh
		// resolution, unless no rename happened since it last passed
		// (moves_linux.go).
		if f.moves.quiet(e.verified.Load()) {
			return e, nil
		}
		epoch := f.moves.epoch.Load()
		if ok, err := f.within(e.fd, e.typ == vfs.TypeDir); !ok || err != nil {
			f.cache.release(e)
			if err != nil {
				return nil, err
			}
			f.cache.drop(e)
			return nil, vfs.ErrStale
		}
		e.verified.Store(epoch)
		return e, nil
	}
	return f.resolve(h)
}

// openByHandle is open_by_handle_at(2), retried a few times on ENOMEM and
// EINTR: decoding the handle of a file that is being deleted has been
// seen to fail with ENOMEM for a moment (6.18 kernel, ext4) before it
// settles on ESTALE. What is still ENOMEM after that is reported as such
// (NFS3ERR_JUKEBOX: the client retries).
func openByHandle(mountFD int, fh unix.FileHandle, flags int) (int, error) {
	for try := 0; ; try++ {
		fd, err := unix.OpenByHandleAt(mountFD, fh, flags)
		if (err != unix.ENOMEM && err != unix.EINTR) || try == 4 {
			return fd, err
		}
		time.Sleep(time.Duration(try+1) * time.Millisecond)
	}
}

// resolve is acquire's slow path: authenticate, open_by_handle_at, check
// the object is alive and inside the export, cache it.
func (f *FS) resolve(h vfs.Handle) (*fdEntry, error) {
	fh, err := f.decode(h)
	if err != nil {
		return nil, err
	}
	fd, err := openByHandle(f.rootFD, fh, unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		switch err {
		case unix.EMFILE, unix.ENFILE, unix.ENOMEM, unix.EINTR:
			return nil, &os.PathError{Op: "open_by_handle_at", Path: "", Err: err}
		}
		return nil, vfs.ErrStale
	}
	epoch := f.moves.epoch.Load()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Nlink == 0 || st.Dev != f.rootDev {
		unix.Close(fd)
		return nil, vfs.ErrStale
	}
	if ok, err := f.within(fd, st.Mode&unix.S_IFMT == unix.S_IFDIR); st.Ino != f.rootIno && (!ok || err != nil) {
		unix.Close(fd)
		if err != nil {
			return nil, err
		}
		return nil, vfs.ErrStale
	}
	e := &fdEntry{key: string(h), fh: fh, fd: fd, ino: st.Ino, typ: modeType(st.Mode)}
	// a version-1 handle of an object that encode gives a version-2 one
	e.legacy = len(h) == osV1Header+len(fh.Bytes())+osV1MACLen && v2Type(fh.Type())
	e.verified.Store(epoch)
	return f.cache.put(e, false), nil
}

// within is the one inside-the-export check. Every path that yields a
// file object goes through it: handle resolution (open_by_handle_at),
// every cache hit of acquire, and Lookup of "..". It compares the
// kernel's current name of the object (d_path, read from the
// /proc/self/fd magic link) with the export root's, both read now: the
// object must be the root or below it. So a directory moved out of the
// export on the server is stale from the next call on, with everything
// below it, and so is any handle of it after a restart: open_by_handle_at
// always reconnects a directory to its real place in the tree.
//
// A non-directory whose dentry is disconnected (the kernel knows no name
// for it: /proc shows "/", as after a restart with a cold dentry cache)
// is accepted on the strength of the handle's authenticator, which proves
// this export issued it; where such a file has since been moved out, it
// stays reachable through its old handle until its dentry is connected
// again (knfsd's no_subtree_check has the same limit). A directory that
// shows no name below the root is always refused. A file with hard links
// inside and outside the export may be named by the kernel through an
// outside link and is then refused (the check prefers refusing to
// guessing). It does not allocate.
func (f *FS) within(fd int, dir bool) (bool, error) {
	var nb, rb [unix.PathMax]byte
	n, err := fdName(fd, nb[:])
	if err != nil {
		return false, err
	}
	name := nb[:n]
	if len(name) == 0 || name[0] != '/' || (len(name) == 1 && !dir) {
		return !dir, nil // disconnected: only a non-directory passes
	}
	rn, err := fdName(f.rootFD, rb[:])
	if err != nil {
		return false, err
	}
	root := rb[:rn]
	if rn == 1 && root[0] == '/' {
		return true, nil // the export is the process's root
	}
	return len(name) > rn && name[rn] == '/' && string(name[:rn]) == string(root), nil
}

// fdName reads the kernel's name of descriptor fd (readlink of
// /proc/self/fd/N) into buf without allocating; a name that does not fit
// is ENAMETOOLONG.
func fdName(fd int, buf []byte) (int, error) {
	var p [32]byte
	b := append(p[:0], "/proc/self/fd/"...)
	b = strconv.AppendInt(b, int64(fd), 10)
	b = append(b, 0)
	cwd := unix.AT_FDCWD // the path is absolute
	n, _, e := unix.Syscall6(unix.SYS_READLINKAT, uintptr(cwd), uintptr(unsafe.Pointer(&b[0])),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
	if e != 0 {
		return 0, &os.PathError{Op: "readlink", Path: "/proc/self/fd", Err: e}
	}
	if int(n) == len(buf) {
		return 0, &os.PathError{Op: "readlink", Path: "/proc/self/fd", Err: unix.ENAMETOOLONG}
	}
	return int(n), nil
}

func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// childEpoch is the rename epoch at which an object opened now by name in
// directory de is known to be inside the export, for its cache entry's
// verified (0: not known, within decides on its first hit). before is
// the epoch read before the open. A child of the root is inside unless a
// rename moved it out after the open, which moves the epoch past before;
// a child of another directory is inside while that directory is, so it
// takes the directory's epoch (no later than before): a rename that moved
// the directory out after it was verified, or the child after the open,
// makes the later hits check.
func (f *FS) childEpoch(de *fdEntry, before uint64) uint64 {
	if de.ino == f.rootIno {
		return before
	}
	return min(de.verified.Load(), before)
}

// adopt turns fd, just opened on an object inside the export, into a
// handle and attributes, caching it with verified set to inside (see
// childEpoch). fd is consumed.
func (f *FS) adopt(fd int, op, name string, inside uint64) (vfs.Handle, vfs.Attr, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, vfs.Attr{}, &os.PathError{Op: op, Path: name, Err: err}
	}
	fh, mnt, err := unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		unix.Close(fd)
		return nil, vfs.Attr{}, &os.PathError{Op: "name_to_handle_at", Path: name, Err: err}
	}
	if mnt != f.rootMount || st.Dev != f.rootDev {
		// A mount point inside the export: not crossed (no crossmnt).
		unix.Close(fd)
		return nil, vfs.Attr{}, vfs.PathErr(op, name, unix.EXDEV)
	}
	if key, ok := f.cache.known(st.Ino, fh); ok {
		// Cached already (put would keep that entry and close fd).
		unix.Close(fd)
		return vfs.Handle(key), statAttr(&st), nil
	}
	h, err := f.encode(fh)
	if err != nil {
		unix.Close(fd)
		return nil, vfs.Attr{}, err
	}
	ne := &fdEntry{key: string(h), fh: fh, fd: fd, ino: st.Ino, typ: modeType(st.Mode)}
	ne.verified.Store(inside)
	e := f.cache.put(ne, false)
	f.cache.release(e)
	return h, statAttr(&st), nil
}

// ioFD returns a descriptor of regular file e for pread (write false) or
// pwrite (write true), opened on first use and kept in the entry.
func (f *FS) ioFD(e *fdEntry, write bool) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wfd >= 0 {
		return e.wfd, nil
	}
	if !write && e.rfd >= 0 {
		return e.rfd, nil
	}
	flags := unix.O_RDONLY
	if write {
		flags = unix.O_RDWR
	}
	fd, err := openByHandle(f.rootFD, e.fh, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW)
	if err != nil {
		if err == unix.ESTALE {
			return -1, vfs.ErrStale
		}
		return -1, &os.PathError{Op: "open", Path: "", Err: err}
	}
	f.cache.open.Add(1)
	if write {
		e.wfd = fd
	} else {
		e.rfd = fd
	}
	return fd, nil
}

// stat fstats e; a dead object (nlink 0) is evicted and reported stale.
func (f *FS) stat(e *fdEntry, st *unix.Stat_t) error {
	if err := unix.Fstat(e.fd, st); err != nil {
		return &os.PathError{Op: "fstat", Path: "", Err: err}
	}
	if st.Nlink == 0 {
		f.cache.drop(e)
		return vfs.ErrStale
	}
	return nil
}

func modeType(m uint32) vfs.FileType {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return vfs.TypeDir
	case unix.S_IFLNK:
		return vfs.TypeLnk
	case unix.S_IFBLK:
		return vfs.TypeBlk
	case unix.S_IFCHR:
		return vfs.TypeChr
	case unix.S_IFSOCK:
		return vfs.TypeSock
	case unix.S_IFIFO:
		return vfs.TypeFIFO
	}
	return vfs.TypeReg
}

func statAttr(st *unix.Stat_t) vfs.Attr {
	a := vfs.Attr{
		Type:   modeType(st.Mode),
		Mode:   st.Mode & 0o7777,
		Nlink:  uint32(st.Nlink),
		UID:    st.Uid,
		GID:    st.Gid,
		Size:   uint64(st.Size),
		Used:   uint64(st.Blocks) * 512,
		FileID: st.Ino,
		Atime:  time.Unix(st.Atim.Sec, st.Atim.Nsec),
		Mtime:  time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		Ctime:  time.Unix(st.Ctim.Sec, st.Ctim.Nsec),
	}
	if a.Type == vfs.TypeBlk || a.Type == vfs.TypeChr {
		a.Major, a.Minor = unix.Major(st.Rdev), unix.Minor(st.Rdev)
	}
	return a
}

// Root returns the export root's handle.
func (f *FS) Root() vfs.Handle { return append(vfs.Handle(nil), f.rootHandle...) }

// GetAttr returns the attributes of h; ErrStale once the object is
// unlinked, even while a cached descriptor keeps its inode alive.
func (f *FS) GetAttr(h vfs.Handle) (vfs.Attr, error) {
	e, err := f.acquire(h)
	if err != nil {
		return vfs.Attr{}, err
	}
	defer f.cache.release(e)
	var st unix.Stat_t
	if err := f.stat(e, &st); err != nil {
		return vfs.Attr{}, err
	}
	return statAttr(&st), nil
}

// SetAttr changes attributes as c, in the order knfsd does: owner (which
// clears set-id bits), mode, size, times. A mode on a symbolic link is
// ignored, as knfsd does. The kernel checks each change against c
// (chown, chmod and explicit times need ownership, UTIME_NOW write
// permission; chmod by a non-member of the file's group drops
// set-group-ID; truncation by a caller without CAP_FSETID drops
// set-user-ID); the truncate descriptor is opened as the server first,
// since the NFS layer has already granted write access. The owner's
// usual changes run as the server where that leaves exactly what c's
// would (setAttrAsServerOK, servermeta_linux.go).
func (f *FS) SetAttr(c vfs.Cred, h vfs.Handle, s vfs.SetAttr) error {
	e, err := f.acquire(h)
	if err != nil {
		return err
	}
	defer f.cache.release(e)
	var st unix.Stat_t
	if err := f.stat(e, &st); err != nil {
		return err
	}
	return f.setAttrIn(c, e, &st, s)
}

// SetAttrAround implements vfs.AttrSetter: one resolution and one fstat
// before the change (what SETATTR checks and reports as pre-operation
// attributes, and what the change decides from, as SetAttr's own fstat
// would, microseconds later), one fstat after it; SetAttr followed by the
// NFS layer's GetAttr before and after took three of each.
func (f *FS) SetAttrAround(c vfs.Cred, h vfs.Handle, decide func(pre *vfs.Attr) (vfs.SetAttr, bool)) (pre, post vfs.Attr, havePre, havePost bool, err error) {
	e, err := f.acquire(h)
	if err != nil {
		return pre, post, false, false, err
	}
	defer f.cache.release(e)
	var st unix.Stat_t
	if err := f.stat(e, &st); err != nil {
		return pre, post, false, false, err
	}
	pre = statAttr(&st)
	s, apply := decide(&pre)
	if !apply {
		return pre, post, true, false, nil
	}
	err = f.setAttrIn(c, e, &st, s)
	if unix.Fstat(e.fd, &st) == nil && st.Nlink != 0 {
		post, havePost = statAttr(&st), true
	}
	return pre, post, true, havePost, err
}

// setAttrIn is SetAttr's work on e, whose fresh stat is st.
func (f *FS) setAttrIn(c vfs.Cred, e *fdEntry, st *unix.Stat_t, s vfs.SetAttr) error {
	var err error
	if err := vfs.CheckChownIDs(&c, &s); err != nil {
		return err
	}
	tfd := -1
	if s.Size != nil {
		switch e.typ {
		case vfs.TypeReg:
		case vfs.TypeDir:
			return vfs.PathErr("truncate", "", unix.EISDIR)
		default:
			return vfs.PathErr("truncate", "", unix.EINVAL)
		}
		if *s.Size > math.MaxInt64 {
			return vfs.PathErr("truncate", "", unix.EFBIG)
		}
		if tfd, err = f.ioFD(e, true); err != nil {
			return err
		}
	}
	// The owner's usual changes run as the server where the kernel's
	// outcome for c is certain (servermeta_linux.go). Each step is
	// idempotent there, so a refusal of the server's is answered by
	// running them all again as c.
	if f.setAttrAsServerOK(&c, e, st, &s) {
		if refused, err := setAttrSteps(e, tfd, &s); !refused {
			return err
		}
	}
	// (The closure and what it captures live in this branch alone, so
	// the fast path allocates nothing for them.)
	cc, sc, fd := c, s, tfd
	return asCaller(&cc, func() error {
		_, err := setAttrSteps(e, fd, &sc)
		return err
	})
}

// setAttrSteps is SetAttr's work on e (tfd: its write descriptor when s
// has a size), as whoever runs it; refused says the kernel refused a
// step with EACCES or EPERM.
func setAttrSteps(e *fdEntry, tfd int, s *vfs.SetAttr) (refused bool, err error) {
	fail := func(op string, errno error) (bool, error) {
		return refusedAsServer(errno), &os.PathError{Op: op, Path: "", Err: errno}
	}
	if s.UID != nil || s.GID != nil {
		uid, gid := -1, -1
		if s.UID != nil {
			uid = int(*s.UID)
		}
		if s.GID != nil {
			gid = int(*s.GID)
		}
		if err := unix.Fchownat(e.fd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
			return fail("chown", err)
		}
	}
	if s.Mode != nil && e.typ != vfs.TypeLnk {
		if err := chmodFD(e.fd, *s.Mode); err != nil {
			var pe *os.PathError
			return errors.As(err, &pe) && refusedAsServer(pe.Err), err
		}
	}
	if s.Size != nil {
		if err := unix.Ftruncate(tfd, int64(*s.Size)); err != nil {
			return fail("truncate", err)
		}
	}
	if s.Atime != nil || s.Mtime != nil || s.AtimeNow || s.MtimeNow {
		ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		switch {
		case s.AtimeNow:
			ts[0] = unix.Timespec{Nsec: unix.UTIME_NOW}
		case s.Atime != nil:
			ts[0] = unix.NsecToTimespec(s.Atime.UnixNano())
		}
		switch {
		case s.MtimeNow:
			ts[1] = unix.Timespec{Nsec: unix.UTIME_NOW}
		case s.Mtime != nil:
			ts[1] = unix.NsecToTimespec(s.Mtime.UnixNano())
		}
		if err := unix.UtimesNanoAt(e.fd, "", ts[:], unix.AT_EMPTY_PATH); err != nil {
			return fail("utimes", err)
		}
	}
	return false, nil
}

// chmodFD sets the exact permission bits of the (non-symlink) object fd,
// unaffected by umask: fchmodat2 with AT_EMPTY_PATH, or on kernels before
// 6.6 chmod of the /proc/self/fd magic link, which names the inode itself.
func chmodFD(fd int, mode uint32) error {
	mode &= 0o7777
	err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
	if err == unix.EOPNOTSUPP || err == unix.ENOSYS {
		err = unix.Fchmodat(unix.AT_FDCWD, procFD(fd), mode, 0)
	}
	if err != nil {
		return &os.PathError{Op: "chmod", Path: "", Err: err}
	}
	return nil
}

// Lookup finds name in dir as c (the kernel checks search permission on
// dir, for "." and ".." too) without following symbolic links. ".." of
// the root is the root; any other ".." result goes through the
// inside-the-export check, so a directory moved out of the export on the
// server cannot lead further out.
func (f *FS) Lookup(c vfs.Cred, dir vfs.Handle, name string) (vfs.Handle, vfs.Attr, error) {
	de, err := f.acquire(dir)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.cache.release(de)
	return f.lookupIn(c, de, name, nil)
}

// LookupDirAttr is Lookup with the directory's attributes
// (vfs.DirLookuper), from the one fstat that also decides whether the
// server may open the name itself (dirGrantsWith).
func (f *FS) LookupDirAttr(c vfs.Cred, dir vfs.Handle, name string) (h vfs.Handle, a vfs.Attr, d vfs.Attr, haveDir bool, err error) {
	de, err := f.acquire(dir)
	if err != nil {
		return nil, vfs.Attr{}, vfs.Attr{}, false, err
	}
	defer f.cache.release(de)
	var st unix.Stat_t
	if err := f.stat(de, &st); err != nil {
		return nil, vfs.Attr{}, vfs.Attr{}, false, err
	}
	d = statAttr(&st)
	h, a, err = f.lookupIn(c, de, name, &st)
	return h, a, d, true, err
}

// LookupEntries implements vfs.EntryLooker: dir is resolved (and its
// inside-the-export check, the rename watch's FIONREAD, made) once for
// every lookup of one READDIRPLUS reply instead of once per entry. The
// names themselves come from ReadDir, which resolves dir once per batch
// of entries, so the entries' attributes and handles are now checked as
// their names are: a directory moved out of the export during the reply
// may still have its remaining entries described in it, as its names
// are listed, but every handle given out is checked on its next use (an
// entry cached before keeps its own verification, a new one takes the
// directory's, and the rename moved the epoch past both).
func (f *FS) LookupEntries(dir vfs.Handle, fn func(lookup func(name string) (vfs.Handle, vfs.Attr, error))) error {
	de, err := f.acquire(dir)
	if err != nil {
		return err
	}
	defer f.cache.release(de)
	fn(func(name string) (vfs.Handle, vfs.Attr, error) { return f.lookupIn(vfs.Cred{}, de, name, nil) })
	return nil
}

// lookupIn is Lookup's work in directory de; dirStat is a stat of de the
// call has just taken, or nil (dirGrantsWith).
func (f *FS) lookupIn(c vfs.Cred, de *fdEntry, name string, dirStat *unix.Stat_t) (vfs.Handle, vfs.Attr, error) {
	if de.typ != vfs.TypeDir {
		return nil, vfs.Attr{}, vfs.PathErr("lookup", name, unix.ENOTDIR)
	}
	self := name == "." || (name == ".." && de.ino == f.rootIno)
	open := name
	switch {
	case self:
		open = "."
	case name == "..":
	default:
		if err := vfs.CheckName("lookup", name); err != nil {
			return nil, vfs.Attr{}, err
		}
	}
	// Opening with O_PATH needs only search permission on the directory.
	granted := f.dirGrantsWith(&c, de, vfs.MayExec, false, dirStat)
	asServer := granted // or the caller is the server itself (asCaller would not switch)
	if !granted {
		sw, err := needsSwitch(&c)
		asServer = err == nil && !sw
	}
	if asServer && !self && name != ".." {
		if h, a, err, done := f.lookupCached(c, de, name); done {
			return h, a, err
		}
	}
	var err error
	fd := -1
	before := f.moves.epoch.Load()
	openIt := func() error {
		var err error
		fd, err = unix.Openat(de.fd, open, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	}
	if !granted {
		err = asCaller(&c, openIt)
	} else if err = openIt(); refusedAsServer(err) {
		err = asCaller(&c, openIt)
	}
	if err != nil {
		return nil, vfs.Attr{}, &os.PathError{Op: "lookup", Path: name, Err: err}
	}
	if self {
		unix.Close(fd)
		var st unix.Stat_t
		if err := f.stat(de, &st); err != nil {
			return nil, vfs.Attr{}, err
		}
		return vfs.Handle(de.key), statAttr(&st), nil
	}
	if name == ".." {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, vfs.Attr{}, &os.PathError{Op: "lookup", Path: name, Err: err}
		}
		if ok, err := f.within(fd, true); st.Ino != f.rootIno && (!ok || err != nil) {
			unix.Close(fd)
			if err != nil {
				return nil, vfs.Attr{}, err
			}
			return nil, vfs.Attr{}, vfs.ErrStale
		}
	}
	inside := uint64(0) // ".." passed within itself, but may lie above a moved directory
	if name != ".." {
		inside = f.childEpoch(de, before)
	}
	return f.adopt(fd, "lookup", name, inside)
}

// lookupCached is LOOKUP of name (not "." or "..") in de, run as the
// server where that is the caller's answer (dirGrants granted search on
// de, or the caller is the server's own identity), for an object the cache holds
// already: name_to_handle_at by name, and when the handle is a cached
// entry's (on the export's mount), an fstat of that entry's descriptor:
// two system calls where opening the name costs four (openat, fstat,
// name_to_handle_at, close). The attributes are those of the very object
// the handle names (its cached descriptor), as after an open; the object
// was found by name in de, so it is inside the export as an opened child
// is, and keeps its entry's verification (as adopt's known does). The
// kernel checks search permission on de for name_to_handle_at as for
// openat; a name that does not exist answers with the kernel's ENOENT,
// one system call, as the open's would.
//
// An object not cached is opened by that handle instead
// (lookupByHandle), three system calls as the open by name was.
//
// done false means nothing was answered and the name is to be opened as
// before: lookupByHandle declined, the cached inode has no link left, it
// is on another mount (a mount point: adopt refuses it), the kernel
// refused the server (the open retries as the caller), or
// name_to_handle_at failed where an open might not (a filesystem without
// handles for it). With done true, h, a and err are the answer.
func (f *FS) lookupCached(c vfs.Cred, de *fdEntry, name string) (h vfs.Handle, a vfs.Attr, err error, done bool) {
	before := f.moves.epoch.Load()
	fh, mnt, err := unix.NameToHandleAt(de.fd, name, 0) // no AT_SYMLINK_FOLLOW: a symlink itself
	switch {
	case err == unix.ENOENT || err == unix.ENAMETOOLONG:
		// What openat of the name answers too.
		return nil, vfs.Attr{}, &os.PathError{Op: "lookup", Path: name, Err: err}, true
	case err != nil || mnt != f.rootMount:
		return nil, vfs.Attr{}, nil, false
	}
	e := f.cache.withHandle(fh)
	if e == nil {
		return f.lookupByHandle(fh, f.childEpoch(de, before))
	}
	var st unix.Stat_t
	serr := unix.Fstat(e.fd, &st)
	key := e.key
	f.cache.release(e)
	if serr != nil || st.Nlink == 0 || st.Dev != f.rootDev {
		return nil, vfs.Attr{}, nil, false
	}
	f.cache.lookupCached.Add(1)
	return vfs.Handle(key), statAttr(&st), nil, true
}

// lookupByHandle is lookupCached for an object not cached: fh, just
// asked by name, is opened by handle (open_by_handle_at, O_PATH: the very
// object the handle names, as a name could not guarantee a moment later)
// and fstat'ed, and cached with verification inside (childEpoch, read
// before name_to_handle_at): three system calls, as openat, fstat and
// name_to_handle_at of the name were. A directory has one dentry, and a
// non-directory with one link the one just found by name (or a
// disconnected one, which the inside-the-export check treats as it
// treats any handle's); one with several links could be opened through
// a link outside the export, which that check would later refuse, so it
// is left to the open by name (done false), as is an object gone
// meanwhile, on another device (a Btrfs subvolume: adopt refuses it), or
// one the kernel will not open by handle.
func (f *FS) lookupByHandle(fh unix.FileHandle, inside uint64) (vfs.Handle, vfs.Attr, error, bool) {
	fd, err := openByHandle(f.rootFD, fh, unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		f.cache.lookupOpened.Add(1)
		return nil, vfs.Attr{}, nil, false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Nlink == 0 || st.Dev != f.rootDev ||
		(st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR) {
		unix.Close(fd)
		f.cache.lookupOpened.Add(1)
		return nil, vfs.Attr{}, nil, false
	}
	h, err := f.encode(fh)
	if err != nil {
		unix.Close(fd)
		return nil, vfs.Attr{}, err, true
	}
	ne := &fdEntry{key: string(h), fh: fh, fd: fd, ino: st.Ino, typ: modeType(st.Mode)}
	ne.verified.Store(inside)
	e := f.cache.put(ne, false)
	f.cache.release(e)
	f.cache.lookupByHandle.Add(1)
	return h, statAttr(&st), nil, true
}

// ReadLink returns a symbolic link's target; EINVAL for other objects.
func (f *FS) ReadLink(h vfs.Handle) (string, error) {
	e, err := f.acquire(h)
	if err != nil {
		return "", err
	}
	defer f.cache.release(e)
	if e.typ != vfs.TypeLnk {
		return "", vfs.PathErr("readlink", "", unix.EINVAL)
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(e.fd, "", buf)
	if err != nil {
		if err == unix.ENOENT {
			return "", vfs.ErrStale
		}
		return "", &os.PathError{Op: "readlink", Path: "", Err: err}
	}
	return string(buf[:n]), nil
}

// ReadAt preads from the cached descriptor; it does not allocate.
func (f *FS) ReadAt(h vfs.Handle, p []byte, off int64) (int, bool, error) {
	e, fd, size, err := f.openForRead(h, off)
	if err != nil {
		return 0, false, err
	}
	defer f.cache.release(e)
	n := 0
	for n < len(p) {
		m, err := unix.Pread(fd, p[n:], off+int64(n))
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return n, false, &os.PathError{Op: "read", Path: "", Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	eof := n < len(p) || off+int64(n) >= size
	return n, eof, nil
}

// ReadFD implements FDReader with the cached read descriptor; the entry
// holds a reference while fn runs, so the descriptor cannot be closed
// under it.
func (f *FS) ReadFD(h vfs.Handle, off int64, n int, fn func(fd int, off int64, n int) (int, error)) (int, bool, error) {
	e, fd, size, err := f.openForRead(h, off)
	if err != nil {
		return 0, false, err
	}
	defer f.cache.release(e)
	if off >= size {
		return 0, true, nil
	}
	// Ask for no more than the file holds, which saves the splice that
	// would only find the end.
	got, err := fn(fd, off, int(min(int64(n), size-off)))
	if err != nil {
		return got, false, &os.PathError{Op: "read", Path: "", Err: err}
	}
	return got, off+int64(got) >= size, nil
}

// openForRead acquires h's entry (the caller releases it) and returns its
// read descriptor and the file size, checking that h is a regular file and
// off is not negative.
func (f *FS) openForRead(h vfs.Handle, off int64) (*fdEntry, int, int64, error) {
	e, err := f.acquire(h)
	if err != nil {
		return nil, -1, 0, err
	}
	fail := func(err error) (*fdEntry, int, int64, error) {
		f.cache.release(e)
		return nil, -1, 0, err
	}
	if err := vfs.CheckRegular(e.typ, "read"); err != nil {
		return fail(err)
	}
	if off < 0 {
		return fail(vfs.PathErr("read", "", unix.EINVAL))
	}
	fd, err := f.ioFD(e, false)
	if err != nil {
		return fail(err)
	}
	var st unix.Stat_t
	if err := f.stat(e, &st); err != nil {
		return fail(err)
	}
	return e, fd, st.Size, nil
}

// WriteAt pwrites p at off on the cached descriptor; with sync it fsyncs
// before returning (data and metadata: fdatasync costs the same on ext4
// and tmpfs here, see nfs/write.go). A file with set-user-ID or
// set-group-ID bits is written as c, so that the kernel clears them when
// c lacks CAP_FSETID, as a local write(2) by c would; other files are
// written as the server, which changes nothing the kernel does and costs
// no identity switch. (A chmod racing the write is ordered after it.)
func (f *FS) WriteAt(c vfs.Cred, h vfs.Handle, p []byte, off int64, sync bool) (int, error) {
	e, err := f.acquire(h)
	if err != nil {
		return 0, err
	}
	defer f.cache.release(e)
	if err := vfs.CheckRegular(e.typ, "write"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, vfs.PathErr("write", "", unix.EINVAL)
	}
	if off > math.MaxInt64-int64(len(p)) {
		return 0, vfs.PathErr("write", "", unix.EFBIG)
	}
	fd, err := f.ioFD(e, true)
	if err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := f.stat(e, &st); err != nil {
		return 0, err
	}
	// The kernel clears set-user-ID and set-group-ID bits on a write by
	// anyone but root (CAP_FSETID): write to set-id files as the caller.
	// (The closure and what it captures live in the branch alone, so the
	// ordinary WRITE allocates nothing.)
	var n int
	if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		var wn int
		cc := c
		err = asCaller(&cc, func() error {
			var err error
			wn, err = pwriteAll(fd, p, off)
			return err
		})
		n = wn
	} else {
		n, err = pwriteAll(fd, p, off)
	}
	if err != nil {
		return n, err
	}
	if sync {
		if err := unix.Fsync(fd); err != nil {
			return n, &os.PathError{Op: "fsync", Path: "", Err: err}
		}
	}
	return n, nil
}

// pwriteAll writes all of p at off, as pwrite(2) until done.
func pwriteAll(fd int, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Pwrite(fd, p[n:], off+int64(n))
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return n, &os.PathError{Op: "write", Path: "", Err: err}
		}
		if m == 0 {
			return n, vfs.PathErr("write", "", unix.EIO)
		}
		n += m
	}
	return n, nil
}

// Commit fsyncs h (a file's data and metadata, or a directory).
func (f *FS) Commit(h vfs.Handle) error {
	e, err := f.acquire(h)
	if err != nil {
		return err
	}
	defer f.cache.release(e)
	var fd int
	switch e.typ {
	case vfs.TypeReg:
		if fd, err = f.ioFD(e, false); err != nil {
			return err
		}
	case vfs.TypeDir:
		if fd, err = unix.Openat(e.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return &os.PathError{Op: "open", Path: ".", Err: err}
		}
		defer unix.Close(fd)
	default:
		return nil
	}
	if err := unix.Fsync(fd); err != nil {
		return &os.PathError{Op: "fsync", Path: "", Err: err}
	}
	return nil
}

// dirEntry acquires dir, checks it is a directory and name is valid.
func (f *FS) dirEntry(dir vfs.Handle, op, name string) (*fdEntry, error) {
	if err := vfs.CheckName(op, name); err != nil {
		return nil, err
	}
	de, err := f.acquire(dir)
	if err != nil {
		return nil, err
	}
	if de.typ != vfs.TypeDir {
		f.cache.release(de)
		return nil, vfs.PathErr(op, name, unix.ENOTDIR)
	}
	return de, nil
}

// Create makes a regular file as c; see FS.Create. The kernel makes it
// c's (group: the directory's when that is set-group-ID), so no other
// identity ever owns it; the exact mode is then set as c when the umask
// took bits away (the kernel drops set-group-ID for a non-member). Where
// the outcome for c is certain, the server makes the same file itself,
// named only once it is c's (createAsServer, servercreate_linux.go).
func (f *FS) Create(c vfs.Cred, dir vfs.Handle, name string, mode uint32, guarded, exclusive bool, verf [8]byte) (vfs.Handle, vfs.Attr, error) {
	de, err := f.dirEntry(dir, "create", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.cache.release(de)
	return f.createIn(c, de, name, mode, guarded, exclusive, verf, nil)
}

// CreateDirAttrs is Create with the directory's attributes before and
// after (vfs.DirAttrChanger), fstat'ed on the descriptor Create works in.
func (f *FS) CreateDirAttrs(c vfs.Cred, dir vfs.Handle, name string, mode uint32, guarded, exclusive bool, verf [8]byte) (h vfs.Handle, a vfs.Attr, d vfs.DirAttrs, err error) {
	err = f.aroundDirChange(dir, "create", name, &d, func(de *fdEntry, before *unix.Stat_t) error {
		var err error
		h, a, err = f.createIn(c, de, name, mode, guarded, exclusive, verf, before)
		return err
	})
	return h, a, d, err
}

// aroundDirChange resolves directory dir (for op on name) and runs change
// in it with the directory's attributes just before and just after into
// d (the DirAttrChanger methods); when dirBefore fails, change does not
// run. change gets the stat d.Before came from, so that its permission
// check (dirGrantsWith) needs no second fstat.
func (f *FS) aroundDirChange(dir vfs.Handle, op, name string, d *vfs.DirAttrs, change func(de *fdEntry, before *unix.Stat_t) error) error {
	de, err := f.dirEntry(dir, op, name)
	if err != nil {
		return err
	}
	defer f.cache.release(de)
	var before unix.Stat_t
	if err := f.dirBefore(de, d, &before); err != nil {
		return err
	}
	err = change(de, &before)
	f.dirAfter(de, d)
	return err
}

// dirBefore fills d.Before from directory de (a dead directory is stale,
// as GetAttr says), leaving the stat in st; on error nothing is set and
// nothing may change.
func (f *FS) dirBefore(de *fdEntry, d *vfs.DirAttrs, st *unix.Stat_t) error {
	if err := f.stat(de, st); err != nil {
		return err
	}
	d.Before, d.HaveBefore = statAttr(st), true
	return nil
}

// dirAfter fills d.After from directory de, unless it cannot be statted
// (the caller asks GetAttr then).
func (f *FS) dirAfter(de *fdEntry, d *vfs.DirAttrs) {
	var st unix.Stat_t
	if unix.Fstat(de.fd, &st) == nil && st.Nlink != 0 {
		d.After, d.HaveAfter = statAttr(&st), true
	}
}

// createIn is Create's work in directory de; dirStat is a stat of de the
// call has just taken, or nil (dirGrantsWith).
func (f *FS) createIn(c vfs.Cred, de *fdEntry, name string, mode uint32, guarded, exclusive bool, verf [8]byte, dirStat *unix.Stat_t) (vfs.Handle, vfs.Attr, error) {
	if h, a, err, done := f.createAsServer(&c, de, name, mode, guarded, exclusive, verf, dirStat); done {
		return h, a, err
	}
	var h vfs.Handle
	var a vfs.Attr
	err := asCaller(&c, func() error {
		var err error
		h, a, err = f.createAs(de, name, mode, guarded, exclusive, verf)
		return err
	})
	return h, a, err
}

// createAs is Create's work in directory de, run as the caller.
func (f *FS) createAs(de *fdEntry, name string, mode uint32, guarded, exclusive bool, verf [8]byte) (vfs.Handle, vfs.Attr, error) {
	before := f.moves.epoch.Load()
	fd, err := unix.Openat(de.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode&0o7777)
	if err == unix.EEXIST && (exclusive || !guarded) {
		return f.existing(de, name, exclusive, verf, before)
	}
	if err != nil {
		return nil, vfs.Attr{}, &os.PathError{Op: "create", Path: name, Err: err}
	}
	if err := exactMode(fd, mode, vfs.TypeReg); err != nil {
		unix.Close(fd)
		return nil, vfs.Attr{}, err
	}
	if exclusive {
		va, vm := vfs.ExclusiveTimes(verf)
		ts := []unix.Timespec{{Sec: va}, {Sec: vm}}
		if err := unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH); err != nil {
			unix.Close(fd)
			return nil, vfs.Attr{}, &os.PathError{Op: "utimes", Path: name, Err: err}
		}
	}
	return f.adopt(fd, "create", name, f.childEpoch(de, before))
}

// existing answers a CREATE of name in de that found the name taken,
// UNCHECKED or EXCLUSIVE: a regular file is the answer (for EXCLUSIVE,
// only the one this verifier made: empty, with the verifier's times);
// before is the rename epoch read before the create.
func (f *FS) existing(de *fdEntry, name string, exclusive bool, verf [8]byte, before uint64) (vfs.Handle, vfs.Attr, error) {
	efd, err := unix.Openat(de.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, vfs.Attr{}, &os.PathError{Op: "create", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(efd, &st); err != nil {
		unix.Close(efd)
		return nil, vfs.Attr{}, &os.PathError{Op: "create", Path: name, Err: err}
	}
	if exclusive {
		va, vm := vfs.ExclusiveTimes(verf)
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Atim.Sec != va || st.Mtim.Sec != vm || st.Size != 0 {
			unix.Close(efd)
			return nil, vfs.Attr{}, vfs.ErrExclusiveMismatch
		}
	} else if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(efd)
		return nil, vfs.Attr{}, vfs.PathErr("create", name, unix.EEXIST)
	}
	return f.adopt(efd, "create", name, f.childEpoch(de, before))
}

// exactMode gives the object just created as fd the permission bits
// mode when the umask took some away, as the calling identity: the
// kernel keeps its own rules (a directory inherits set-group-ID from a
// set-group-ID parent; a non-member of the group cannot set it).
func exactMode(fd int, mode uint32, t vfs.FileType) error {
	if t == vfs.TypeLnk {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: "", Err: err}
	}
	want := mode & 0o7777
	if t == vfs.TypeDir {
		want |= st.Mode & unix.S_ISGID
	}
	if st.Mode&0o777 == want&0o777 && st.Mode&0o7000 == want&0o7000 {
		return nil
	}
	return chmodFD(fd, want)
}

// made opens the object just created as name in de (never following a
// symlink), checks its type and sets its exact mode; called as the
// creating identity, so the object is its own and a name swapped in
// meanwhile by someone else can only be refused by the kernel.
func (f *FS) made(de *fdEntry, op, name string, t vfs.FileType, mode uint32) (int, error) {
	flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if t == vfs.TypeDir {
		flags |= unix.O_DIRECTORY
	}
	fd, err := unix.Openat(de.fd, name, flags, 0)
	if err != nil {
		return -1, &os.PathError{Op: op, Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || modeType(st.Mode) != t {
		unix.Close(fd)
		return -1, vfs.PathErr(op, name, unix.EEXIST) // replaced under us
	}
	if err := exactMode(fd, mode, t); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// makeAs runs mk (mkdirat, symlinkat or mknodat of name in de) as c,
// then opens the result as c (made) and adopts it as the server. Both
// run as c on the calling goroutine's thread where the process allows it
// (asCallerHere), else on an identity thread.
func (f *FS) makeAs(c *vfs.Cred, de *fdEntry, op, name string, t vfs.FileType, mode uint32, mk func() error) (vfs.Handle, vfs.Attr, error) {
	fd := -1
	before := f.moves.epoch.Load()
	err := asCallerHere(c, func() error {
		if err := mk(); err != nil {
			return &os.PathError{Op: op, Path: name, Err: err}
		}
		var err error
		fd, err = f.made(de, op, name, t, mode)
		return err
	})
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	return f.adopt(fd, op, name, f.childEpoch(de, before))
}

// Mkdir makes a directory as c with exactly mode (plus the set-group-ID
// bit a set-group-ID parent passes on).
func (f *FS) Mkdir(c vfs.Cred, dir vfs.Handle, name string, mode uint32) (vfs.Handle, vfs.Attr, error) {
	de, err := f.dirEntry(dir, "mkdir", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.cache.release(de)
	return f.makeAs(&c, de, "mkdir", name, vfs.TypeDir, mode, func() error {
		return unix.Mkdirat(de.fd, name, mode&0o7777)
	})
}

// Symlink makes a symbolic link as c; mode is ignored (Linux symlinks
// are always 0777).
func (f *FS) Symlink(c vfs.Cred, dir vfs.Handle, name, target string, mode uint32) (vfs.Handle, vfs.Attr, error) {
	de, err := f.dirEntry(dir, "symlink", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.cache.release(de)
	return f.makeAs(&c, de, "symlink", name, vfs.TypeLnk, mode, func() error {
		return unix.Symlinkat(target, de.fd, name)
	})
}

// Mknod makes a FIFO, socket, or character or block device as c (devices
// need CAP_MKNOD: EPERM for anyone but root); EINVAL for other types.
func (f *FS) Mknod(c vfs.Cred, dir vfs.Handle, name string, typ vfs.FileType, mode uint32, major, minor uint32) (vfs.Handle, vfs.Attr, error) {
	var kind uint32
	dev := 0
	switch typ {
	case vfs.TypeFIFO:
		kind = unix.S_IFIFO
	case vfs.TypeSock:
		kind = unix.S_IFSOCK
	case vfs.TypeChr:
		kind, dev = unix.S_IFCHR, int(unix.Mkdev(major, minor))
	case vfs.TypeBlk:
		kind, dev = unix.S_IFBLK, int(unix.Mkdev(major, minor))
	default:
		return nil, vfs.Attr{}, vfs.PathErr("mknod", name, unix.EINVAL)
	}
	de, err := f.dirEntry(dir, "mknod", name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	defer f.cache.release(de)
	return f.makeAs(&c, de, "mknod", name, typ, mode, func() error {
		return unix.Mknodat(de.fd, name, kind|mode&0o7777, dev)
	})
}

// victim lstats name in de; ok is false when it does not exist.
func victim(de *fdEntry, name string) (unix.Stat_t, bool) {
	var st unix.Stat_t
	err := unix.Fstatat(de.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err == nil
}

// Remove unlinks a non-directory as c (EISDIR for a directory; the
// kernel checks write and search permission and the sticky bit).
func (f *FS) Remove(c vfs.Cred, dir vfs.Handle, name string) error {
	de, err := f.dirEntry(dir, "remove", name)
	if err != nil {
		return err
	}
	defer f.cache.release(de)
	return f.removeIn(c, de, name, nil)
}

// RemoveDirAttrs is Remove with the directory's attributes before and
// after (vfs.DirAttrChanger).
func (f *FS) RemoveDirAttrs(c vfs.Cred, dir vfs.Handle, name string) (d vfs.DirAttrs, err error) {
	err = f.aroundDirChange(dir, "remove", name, &d, func(de *fdEntry, before *unix.Stat_t) error { return f.removeIn(c, de, name, before) })
	return d, err
}

// removeIn is Remove's work in directory de; dirStat is a stat of de the
// call has just taken, or nil (dirGrantsWith).
func (f *FS) removeIn(c vfs.Cred, de *fdEntry, name string, dirStat *unix.Stat_t) error {
	var err error
	var st unix.Stat_t
	var ok bool
	var unlinkErr error
	unlink := func() error {
		st, ok = victim(de, name)
		if ok && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return vfs.PathErr("remove", name, unix.EISDIR)
		}
		if unlinkErr = unix.Unlinkat(de.fd, name, 0); unlinkErr != nil {
			return &os.PathError{Op: "remove", Path: name, Err: unlinkErr}
		}
		return nil
	}
	// Unlinking from a directory that is not sticky needs only write and
	// search permission on it.
	if !f.dirGrantsWith(&c, de, vfs.MayWrite|vfs.MayExec, true, dirStat) {
		err = asCaller(&c, unlink)
	} else if err = unlink(); err != nil && refusedAsServer(unlinkErr) {
		err = asCaller(&c, unlink)
	}
	if err != nil {
		return err
	}
	if ok && st.Nlink <= 1 {
		f.cache.dropIno(st.Ino)
	}
	return nil
}

// Rmdir removes an empty directory as c.
func (f *FS) Rmdir(c vfs.Cred, dir vfs.Handle, name string) error {
	de, err := f.dirEntry(dir, "rmdir", name)
	if err != nil {
		return err
	}
	defer f.cache.release(de)
	return f.rmdirIn(c, de, name, nil)
}

// RmdirDirAttrs is Rmdir with the directory's attributes before and
// after (vfs.DirAttrChanger).
func (f *FS) RmdirDirAttrs(c vfs.Cred, dir vfs.Handle, name string) (d vfs.DirAttrs, err error) {
	err = f.aroundDirChange(dir, "rmdir", name, &d, func(de *fdEntry, before *unix.Stat_t) error { return f.rmdirIn(c, de, name, before) })
	return d, err
}

// rmdirIn is Rmdir's work in directory de; dirStat is a stat of de the
// call has just taken, or nil (dirGrantsWith).
func (f *FS) rmdirIn(c vfs.Cred, de *fdEntry, name string, dirStat *unix.Stat_t) error {
	var err error
	var st unix.Stat_t
	var ok bool
	var unlinkErr error
	rmdir := func() error {
		st, ok = victim(de, name)
		if unlinkErr = unix.Unlinkat(de.fd, name, unix.AT_REMOVEDIR); unlinkErr != nil {
			return &os.PathError{Op: "rmdir", Path: name, Err: unlinkErr}
		}
		return nil
	}
	if !f.dirGrantsWith(&c, de, vfs.MayWrite|vfs.MayExec, true, dirStat) {
		err = asCaller(&c, rmdir)
	} else if err = rmdir(); err != nil && refusedAsServer(unlinkErr) {
		err = asCaller(&c, rmdir)
	}
	if err != nil {
		return err
	}
	if ok {
		f.cache.dropIno(st.Ino)
	}
	return nil
}

// Rename is renameat(2) as c between two directories of the export: the
// kernel checks both directories, the sticky bit on the source and on a
// replaced target, and write permission on a directory that moves to a
// new parent (its ".." changes). Within one directory that is not
// sticky, where the caller needs only write and search permission on it,
// it runs as the server when dirGrants grants those
// (servermeta_linux.go).
func (f *FS) Rename(c vfs.Cred, fromDir vfs.Handle, fromName string, toDir vfs.Handle, toName string) error {
	fe, err := f.dirEntry(fromDir, "rename", fromName)
	if err != nil {
		return err
	}
	defer f.cache.release(fe)
	te, err := f.dirEntry(toDir, "rename", toName)
	if err != nil {
		return err
	}
	defer f.cache.release(te)
	var mv renaming
	if !f.renameAsServerOK(&c, fe, te) || mv.do(fe, fromName, te, toName) != nil && refusedAsServer(mv.errno) {
		// (The closure and what it captures live in this branch alone.)
		cc, m := c, &renaming{}
		err = asCaller(&cc, func() error { return m.do(fe, fromName, te, toName) })
		mv = *m
	}
	if mv.errno != nil {
		return &os.LinkError{Op: "rename", Old: fromName, New: toName, Err: mv.errno}
	}
	if err != nil {
		return err
	}
	if mv.replaced && mv.dst.Ino != mv.src.Ino && (mv.dst.Nlink <= 1 || mv.dst.Mode&unix.S_IFMT == unix.S_IFDIR) {
		f.cache.dropIno(mv.dst.Ino)
	}
	return nil
}

// renaming is what one renameat left: the source and a replaced
// target as they were just before it, and its errno (nil: done).
type renaming struct {
	src, dst unix.Stat_t
	replaced bool
	errno    error
}

// do lstats both names and renames, as whoever runs it.
func (m *renaming) do(fe *fdEntry, fromName string, te *fdEntry, toName string) error {
	m.src, _ = victim(fe, fromName)
	m.dst, m.replaced = victim(te, toName)
	m.errno = unix.Renameat(fe.fd, fromName, te.fd, toName)
	return m.errno
}

// Link makes name in dir a hard link to h as c (EPERM for a directory,
// and, with fs.protected_hardlinks, for a file c neither owns nor may
// read and write). linkat's AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH,
// which the caller's identity lacks, so the link is made through the
// descriptor's /proc/self/fd name with AT_SYMLINK_FOLLOW; the file's
// owner, granted write and search on the directory, links it as the
// server with AT_EMPTY_PATH (linkAsServerOK, servermeta_linux.go).
func (f *FS) Link(c vfs.Cred, h vfs.Handle, dir vfs.Handle, name string) error {
	de, err := f.dirEntry(dir, "link", name)
	if err != nil {
		return err
	}
	defer f.cache.release(de)
	e, err := f.acquire(h)
	if err != nil {
		return err
	}
	defer f.cache.release(e)
	// The owner of the file, granted write and search on the directory,
	// links it as the server (servermeta_linux.go), by the descriptor.
	var st unix.Stat_t
	if !f.linkAsServerOK(&c, e, de, &st) {
		err = f.linkAsCaller(&c, e, de, name)
	} else if err = unix.Linkat(e.fd, "", de.fd, name, unix.AT_EMPTY_PATH); refusedAsServer(err) {
		err = f.linkAsCaller(&c, e, de, name)
	}
	if err != nil {
		if err == unix.ENOENT {
			var st unix.Stat_t
			if f.stat(e, &st) == vfs.ErrStale {
				return vfs.ErrStale
			}
		}
		return &os.LinkError{Op: "link", Old: "", New: name, Err: err}
	}
	return nil
}

// linkAsCaller is Link's linkat as c, through e's /proc/self/fd name.
func (f *FS) linkAsCaller(c *vfs.Cred, e, de *fdEntry, name string) error {
	cc, src := *c, procFD(e.fd)
	return asCaller(&cc, func() error {
		return unix.Linkat(unix.AT_FDCWD, src, de.fd, name, unix.AT_SYMLINK_FOLLOW)
	})
}

// FSStat reports the filesystem's statfs figures.
func (f *FS) FSStat() (vfs.FSStat, error) {
	if f.closed.Load() {
		return vfs.FSStat{}, fs.ErrClosed
	}
	var s unix.Statfs_t
	if err := unix.Fstatfs(f.rootFD, &s); err != nil {
		return vfs.FSStat{}, &os.PathError{Op: "statfs", Path: "", Err: err}
	}
	bs := uint64(s.Bsize)
	return vfs.FSStat{
		TotalBytes: s.Blocks * bs,
		FreeBytes:  s.Bfree * bs,
		AvailBytes: s.Bavail * bs,
		TotalFiles: s.Files,
		FreeFiles:  s.Ffree,
		AvailFiles: s.Ffree,
	}, nil
}

// OpenFiles reports the descriptors the FS holds (cache and root).
func (f *FS) OpenFiles() int { return int(f.cache.open.Load()) }

// Close closes every cached descriptor and the root. Calls still running
// finish with their descriptors, closed when they return; later calls fail
// with fs.ErrClosed. Close is idempotent.
func (f *FS) Close() error {
	if f.closed.Swap(true) {
		return nil
	}
	f.cache.stopSweep() // before closeAll: no sweep reference outlives Close
	f.cache.closeAll()
	f.moves.close()
	return nil
}

var (
	_ vfs.FS             = (*FS)(nil)
	_ vfs.DirAttrChanger = (*FS)(nil)
	_ vfs.DirLookuper    = (*FS)(nil)
)
