package localfs

import (
	"container/list"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Directory cookies of the OS backend (doc.go, "ReadDir cookies").
//
// Why not always d_off: on the Linux 6.1 tmpfs (and every filesystem
// built on libfs's dcache_readdir before 6.6) the d_off getdents64 gives
// is a position, "the N-th entry", and lseek to it walks the directory
// list counting N live entries. When entries before that position are
// removed between two READDIR calls, as `rm -rf` does while it lists, the
// same cookie lands N entries further on and the entries in between are
// never listed: rm then fails with ENOTEMPTY. Filesystems whose offsets
// are hashes or fixed slots (ext2/3/4, xfs, btrfs) keep d_off; everything
// else gets name cookies: a keyed hash of the name, with the listing
// returned in cookie order from a sorted snapshot of the directory.

// Cookie schemes. The scheme goes into the cookie verifier so that
// cookies of one scheme are refused (NFS3ERR_BAD_COOKIE) by the other.
const (
	cookiesOffset = 1 // d_off from getdents64
	cookiesName   = 2 // SipHash-2-4 of the name, in sorted order
)

// Name-cookie space: "." is 1, ".." 2, names 3 .. 2^63-1.
const (
	cookieDot    = 1
	cookieDotDot = 2
	cookieFirst  = 3
)

// Bounds of the snapshot cache: directories kept and their total size
// (names plus per-entry overhead). A directory larger than the byte
// bound is listed from a snapshot that is not kept, so each call of its
// listing reads the whole directory again.
const (
	maxSnapDirs  = 256
	maxSnapBytes = 64 << 20
	snapEntryFix = 40 // bytes per entry besides the name
	// settleTime: a snapshot whose directory's ctime is this much older
	// than the snapshot's start cannot have missed a change made in the
	// same timestamp tick (coarse ctime: a jiffy on tmpfs, one or two
	// seconds on some filesystems), so it serves a new listing as is.
	settleTime = 2 * time.Second
	// staleAfter: a snapshot of a directory that changed since is
	// retaken by a resumed call once it is this old, so a listing resumed
	// from a client's cached page does not miss entries created long
	// before it, while `rm -rf` still reads a big directory once every
	// few seconds, not once per call.
	staleAfter = 5 * time.Second
)

// stableOffsets reports whether getdents64 offsets of the filesystem
// with statfs type magic stay attached to their entries while others are
// added and removed: ext2/3/4 (htree hash of the name, or the byte offset
// in an unindexed directory, which removal does not move), xfs (the
// entry's offset in the directory's data blocks, kept across shortform,
// block and leaf forms), btrfs (the entry's DIR_INDEX number, never
// reused). tmpfs is not listed: before Linux 6.6 its offsets are
// positions, and a statfs cannot tell the kernel's version apart.
func stableOffsets(magic int64) bool {
	switch magic {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC:
		return true
	}
	return false
}

// osDirs is the FS's readdir state: the scheme chosen for the export's
// filesystem, the verifier, the name-hash key and the snapshot cache.
type osDirs struct {
	scheme uint8
	verf   uint64
	k0, k1 uint64

	mu    sync.Mutex
	snaps map[string]*list.Element // of *dirSnap, by handle bytes
	lru   list.List
	bytes int
}

// dirSnap is one directory's listing in cookie order. It is never
// changed once published: a newer listing replaces it.
type dirSnap struct {
	key          string
	ctime, mtime unix.Timespec // of the directory when the read began
	started      time.Time     // wall clock when the read began
	// quiet: the directory's ctime was settleTime older than started, so
	// a change made after the snapshot moves ctime (see readDirNames)
	quiet       bool
	dot, dotdot uint64      // inode numbers of "." and ".."
	ents        []snapEntry // by cookie, then name
	size        int
}

type snapEntry struct {
	cookie uint64
	ino    uint64
	name   string
}

// init picks the scheme from the filesystem of the export root rootFD
// and derives the hash key from the handle key, so it survives restarts
// exactly as long as handles do. The verifier is zero for the scheme the
// filesystem gets by default: it cannot change while the handles stay
// valid (another filesystem at the export root makes them stale). Forced
// name cookies on a filesystem of stable offsets (Options.NameCookies)
// get a verifier derived from the key, so that the default scheme refuses
// their cookies after a restart without the option. The other way round
// is not caught: cookies of the default scheme come with verifier 0,
// which every scheme accepts (the option is for tests, not in exports).
func (d *osDirs) init(rootFD int, key []byte, forceNames bool) error {
	var s unix.Statfs_t
	if err := unix.Fstatfs(rootFD, &s); err != nil {
		return &os.PathError{Op: "statfs", Path: "", Err: err}
	}
	d.scheme = cookiesName
	if !forceNames && stableOffsets(int64(s.Type)) {
		d.scheme = cookiesOffset
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("gonfsrdma readdir cookies v1"))
	mac.Write([]byte{d.scheme})
	sum := mac.Sum(nil)
	if forceNames && stableOffsets(int64(s.Type)) {
		d.verf = binary.BigEndian.Uint64(sum[0:8]) | 1
	}
	d.k0 = binary.LittleEndian.Uint64(sum[8:16])
	d.k1 = binary.LittleEndian.Uint64(sum[16:24])
	d.snaps = make(map[string]*list.Element)
	return nil
}

// DirCookies names the ReadDir cookie scheme the export uses: "offset"
// (getdents64 d_off) or "name" (keyed hash of the name); see doc.go.
func (f *FS) DirCookies() string {
	if f.dirs.scheme == cookiesOffset {
		return "offset"
	}
	return "name"
}

// nameCookie is the cookie of a name: 3 .. 2^63-1.
func (d *osDirs) nameCookie(name string) uint64 {
	c := sipHash24(d.k0, d.k1, name) >> 1
	if c < cookieFirst {
		c += cookieFirst
	}
	return c
}

func (d *osDirs) get(key string) *dirSnap {
	d.mu.Lock()
	defer d.mu.Unlock()
	el := d.snaps[key]
	if el == nil {
		return nil
	}
	d.lru.MoveToFront(el)
	return el.Value.(*dirSnap)
}

// put publishes s as its directory's snapshot, evicting the least
// recently used ones beyond the bounds; a snapshot larger than the byte
// bound is not kept.
func (d *osDirs) put(s *dirSnap) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if el := d.snaps[s.key]; el != nil {
		d.bytes -= el.Value.(*dirSnap).size
		d.lru.Remove(el)
		delete(d.snaps, s.key)
	}
	if s.size > maxSnapBytes {
		return
	}
	for d.lru.Len() >= maxSnapDirs || (d.lru.Len() > 0 && d.bytes+s.size > maxSnapBytes) {
		old := d.lru.Back()
		o := old.Value.(*dirSnap)
		d.bytes -= o.size
		d.lru.Remove(old)
		delete(d.snaps, o.key)
	}
	d.snaps[s.key] = d.lru.PushFront(s)
	d.bytes += s.size
}

// ReadDir lists dir with getdents64; see doc.go for the cookie schemes.
func (f *FS) ReadDir(dir vfs.Handle, cookie, verf uint64, max int) ([]vfs.DirEntry, uint64, bool, error) {
	de, err := f.acquire(dir)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.cache.release(de)
	if de.typ != vfs.TypeDir {
		return nil, 0, false, vfs.PathErr("readdir", "", unix.ENOTDIR)
	}
	if max <= 0 {
		return nil, 0, false, vfs.PathErr("readdir", "", unix.EINVAL)
	}
	if cookie > math.MaxInt64 || (cookie != 0 && verf != 0 && verf != f.dirs.verf) {
		return nil, 0, false, vfs.ErrBadCookie
	}
	var es []vfs.DirEntry
	var eof bool
	if f.dirs.scheme == cookiesOffset {
		es, eof, err = f.readDirOffsets(de, cookie, max)
	} else {
		es, eof, err = f.readDirNames(de, cookie, max)
	}
	if err != nil {
		return nil, 0, false, err
	}
	return es, f.dirs.verf, eof, nil
}

// readDirOffsets resumes at d_off cookie on a fresh directory stream:
// for filesystems whose offsets are stable (stableOffsets).
func (f *FS) readDirOffsets(de *fdEntry, cookie uint64, max int) ([]vfs.DirEntry, bool, error) {
	fd, err := unix.Openat(de.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, &os.PathError{Op: "readdir", Path: "", Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := f.stat(de, &st); err != nil {
		return nil, false, err
	}
	if cookie != 0 {
		if _, err := unix.Seek(fd, int64(cookie), 0); err != nil {
			if err == unix.EINVAL {
				return nil, false, vfs.ErrBadCookie
			}
			return nil, false, &os.PathError{Op: "readdir", Path: "", Err: err}
		}
	}
	var out []vfs.DirEntry
	done := false
	eof, err := f.getdents(fd, func(name string, ino, off uint64) bool {
		if done {
			return false // one entry past max: not the end
		}
		if name == ".." && de.ino == f.rootIno {
			ino = f.rootIno
		}
		out = append(out, vfs.DirEntry{Name: name, FileID: ino, Cookie: off})
		done = len(out) == max
		return true
	})
	if err != nil {
		return nil, false, err
	}
	return out, eof, nil
}

// getdents reads the directory stream fd to its end, or until fn returns
// false, and reports whether it reached the end (fn was never refused).
func (f *FS) getdents(fd int, fn func(name string, ino, off uint64) bool) (bool, error) {
	bp := f.bufs.Get().(*[]byte)
	defer f.bufs.Put(bp)
	buf := *bp
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return false, &os.PathError{Op: "getdents", Path: "", Err: err}
		}
		if n == 0 {
			return true, nil
		}
		for pos := 0; pos < n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			if n-pos < 19 {
				return false, vfs.PathErr("getdents", "", unix.EIO)
			}
			reclen := int(binary.NativeEndian.Uint16(buf[pos+16:]))
			if reclen < 19 || pos+reclen > n {
				return false, vfs.PathErr("getdents", "", unix.EIO)
			}
			ino := binary.NativeEndian.Uint64(buf[pos:])
			off := binary.NativeEndian.Uint64(buf[pos+8:])
			nameb := buf[pos+19 : pos+reclen]
			for i, c := range nameb {
				if c == 0 {
					nameb = nameb[:i]
					break
				}
			}
			pos += reclen
			if !fn(string(nameb), ino, off) {
				return false, nil
			}
		}
	}
}

// readDirNames serves name cookies: entries after cookie in cookie order
// from the directory's snapshot. A listing's first call (cookie 0) takes
// a new snapshot unless the kept one is provably current; later calls
// use the kept one, so a directory emptied while it is listed is read
// once, not once per call. Any snapshot taken since the listing began
// holds every entry that existed throughout it, and cookie order does not
// depend on which snapshot is used, so such an entry is returned exactly
// once. When the directory changed since the snapshot, each entry is
// checked with fstatat before it is returned (removed ones are skipped),
// and a snapshot older than staleAfter is retaken.
func (f *FS) readDirNames(de *fdEntry, cookie uint64, max int) ([]vfs.DirEntry, bool, error) {
	var st unix.Stat_t
	if err := f.stat(de, &st); err != nil {
		return nil, false, err
	}
	s := f.dirs.get(de.key)
	if s == nil || (cookie == 0 && !s.settled(&st)) || (s.changedSince(&st) && time.Since(s.started) > staleAfter) {
		var err error
		if s, err = f.snapshot(de); err != nil {
			return nil, false, err
		}
		f.dirs.put(s)
	}
	// A change made in the timestamp tick of the snapshot's ctime does
	// not show in the directory's ctime: unless the snapshot began
	// settleTime after that tick, every entry is checked as if it had.
	changed := s.changedSince(&st) || !s.quiet
	var out []vfs.DirEntry
	if cookie < cookieDot {
		out = append(out, vfs.DirEntry{Name: ".", FileID: s.dot, Cookie: cookieDot})
	}
	if cookie < cookieDotDot && len(out) < max {
		out = append(out, vfs.DirEntry{Name: "..", FileID: s.dotdot, Cookie: cookieDotDot})
	}
	i, _ := slices.BinarySearchFunc(s.ents, cookie+1, func(e snapEntry, c uint64) int {
		if e.cookie < c {
			return -1
		} else if e.cookie > c {
			return 1
		}
		return 0
	})
	for ; i < len(s.ents); i++ {
		e := &s.ents[i]
		ino := e.ino
		if changed {
			var est unix.Stat_t
			err := unix.Fstatat(de.fd, e.name, &est, unix.AT_SYMLINK_NOFOLLOW)
			if err == unix.ENOENT {
				continue
			}
			if err != nil {
				return nil, false, &os.PathError{Op: "readdir", Path: e.name, Err: err}
			}
			ino = est.Ino
		}
		if len(out) == max {
			return out, false, nil
		}
		out = append(out, vfs.DirEntry{Name: e.name, FileID: ino, Cookie: e.cookie})
	}
	return out, true, nil
}

// changedSince reports whether the directory whose attributes are st
// changed since s began.
func (s *dirSnap) changedSince(st *unix.Stat_t) bool {
	return s.ctime != st.Ctim || s.mtime != st.Mtim
}

// settled reports whether s still lists the directory whose attributes
// are st: the change times match, and they are old enough that no change
// can have shared their timestamp after the snapshot began.
func (s *dirSnap) settled(st *unix.Stat_t) bool {
	return !s.changedSince(st) && s.quiet
}

// snapshot reads the whole directory de into a dirSnap in cookie order.
func (f *FS) snapshot(de *fdEntry) (*dirSnap, error) {
	fd, err := unix.Openat(de.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "readdir", Path: "", Err: err}
	}
	defer unix.Close(fd)
	s := &dirSnap{key: de.key, started: time.Now(), dot: de.ino, dotdot: de.ino}
	var st unix.Stat_t
	if err := f.stat(de, &st); err != nil {
		return nil, err
	}
	s.ctime, s.mtime = st.Ctim, st.Mtim
	s.quiet = s.started.Sub(time.Unix(st.Ctim.Unix())) >= settleTime
	if st.Size > 0 && st.Size < 1<<20 {
		s.ents = make([]snapEntry, 0, st.Size/32)
	}
	if _, err := f.getdents(fd, func(name string, ino, _ uint64) bool {
		switch name {
		case ".":
		case "..":
			if de.ino != f.rootIno {
				s.dotdot = ino
			}
		default:
			s.ents = append(s.ents, snapEntry{cookie: f.dirs.nameCookie(name), ino: ino, name: name})
			s.size += len(name) + snapEntryFix
		}
		return true
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(s.ents, func(a, b snapEntry) int {
		if a.cookie != b.cookie {
			if a.cookie < b.cookie {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return s, nil
}
