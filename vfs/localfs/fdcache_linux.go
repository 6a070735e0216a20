package localfs

import (
	"container/list"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Buffer and descriptor ownership: every descriptor in this file belongs to
// the fdCache. An fdEntry is handed to an FS method by acquire with a
// reference held; the method may use the entry's descriptors until it calls
// release, and must never close them. Eviction (LRU overflow, invalidation,
// Close) unlinks the entry at once and closes its descriptors when the last
// reference is released, so an in-flight pread never sees a recycled fd.
// The sweep (sweep, below) takes a reference of its own on each idle entry
// it examines, so it never closes or fstats a descriptor another goroutine
// may be closing, and it evicts only entries nobody else references.

// fdEntry is one cached file object of the OS backend.
type fdEntry struct {
	key  string          // the vfs handle bytes
	fh   unix.FileHandle // the kernel handle, to reopen for I/O
	kkey string          // fh as kernelKeyOf lays it out: the key of fdCache.byFH
	// legacy: key is a version-1 handle a client presented for an
	// object encode now gives a version-2 handle; a LOOKUP by name does
	// not hand it out (known, withHandle), so clients converge on one
	// handle an object
	legacy bool
	fd     int           // O_PATH (or any) descriptor naming the object
	ino    uint64        // st_ino, for invalidation on unlink
	typ    vfs.FileType  // immutable for an inode
	elem   *list.Element // position in the LRU; nil for the pinned root

	mu  sync.Mutex // guards rfd and wfd while opening them lazily
	rfd int        // O_RDONLY descriptor of a regular file or directory, -1 until needed
	wfd int        // O_RDWR descriptor of a regular file, -1 until needed

	// verified is the rename epoch (moveWatch) at which the object was
	// last found inside the export; 0: never.
	verified atomic.Uint64
	// aclFreeCtime is the ctime (ns) of a directory at which it was found
	// to have no access ACL; 0: not known (modeperm_linux.go).
	aclFreeCtime atomic.Int64

	refs    int  // under fdCache.mu
	evicted bool // under fdCache.mu
}

// fdCache is a bounded LRU of fdEntry keyed by handle.
type fdCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]*fdEntry
	byIno map[uint64]*fdEntry
	// byFH indexes m by kernel handle (the entry's kkey), for
	// a LOOKUP that asked name_to_handle_at by name (withHandle).
	byFH map[string]*fdEntry
	lru  list.List
	open atomic.Int64 // descriptors currently held by entries

	// Counters for the metrics, added under mu, read without it.
	hits, misses, evictions atomic.Uint64
	// lookupCached, lookupByHandle and lookupOpened count the LOOKUPs of
	// a name answered from a cached entry by its kernel handle, those
	// that opened an uncached one by that handle, and those left to the
	// open by name (FS.lookupCached, FS.lookupByHandle); for tests.
	lookupCached, lookupByHandle, lookupOpened atomic.Uint64

	// The sweep: sweepMu serializes sweeps and guards sweepBuf (the
	// entries one sweep examines, kept between sweeps so a sweep does not
	// allocate); sweeps counts the sweeps done. sweepStop and sweepDone
	// are the goroutine's stop request and exit (nil: never started).
	sweepMu              sync.Mutex
	sweepBuf             []*fdEntry
	sweeps               atomic.Uint64
	sweepStop, sweepDone chan struct{}
}

// DefaultSweepInterval is how often, unless Options.SweepInterval says
// otherwise, the open-file cache looks for cached objects that another
// process unlinked (see sweep).
const DefaultSweepInterval = 2 * time.Second

func newFDCache(max int) *fdCache {
	return &fdCache{max: max, m: make(map[string]*fdEntry), byIno: make(map[uint64]*fdEntry), byFH: make(map[string]*fdEntry)}
}

// startSweep runs sweep every interval until stopSweep.
func (c *fdCache) startSweep(every time.Duration) {
	c.sweepStop, c.sweepDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.sweepDone)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-c.sweepStop:
				return
			case <-t.C:
				c.sweep()
			}
		}
	}()
}

// stopSweep stops the sweep goroutine and waits until it has returned (a
// sweep in progress finishes first). Called once.
func (c *fdCache) stopSweep() {
	if c.sweepStop != nil {
		close(c.sweepStop)
		<-c.sweepDone
	}
}

// sweep evicts the idle entries (no references) whose object has no link
// left (fstat of the O_PATH descriptor shows nlink 0): a file or directory
// another process removed, which the cache would otherwise keep open, and
// its blocks allocated, until a client touched its handle again or the
// LRU pushed it out. It returns how many it evicted (counted in
// Evictions). Entries in use are left to the call that holds them (its
// own fstat reports the object stale) and to the next sweep.
//
// Under mu it only takes a reference on each idle LRU entry (the pinned
// root is not in the LRU); the fstat calls run without the lock, the
// sweep's reference keeping each descriptor open; then, under mu again,
// an entry whose object is gone and which nobody else took meanwhile is
// unlinked, and entries whose last reference was the sweep's are closed
// after the lock is dropped, as release does. It does not allocate once
// sweepBuf has grown to the cache's size.
func (c *fdCache) sweep() int {
	c.sweepMu.Lock()
	defer c.sweepMu.Unlock()
	buf := c.sweepBuf[:0]
	c.mu.Lock()
	for el := c.lru.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*fdEntry); e.refs == 0 {
			e.refs++
			buf = append(buf, e)
		}
	}
	c.mu.Unlock()
	// Move the entries whose object is gone to the front, buf[:dead].
	dead := 0
	for i, e := range buf {
		var st unix.Stat_t
		if unix.Fstat(e.fd, &st) == nil && st.Nlink == 0 {
			buf[dead], buf[i] = buf[i], buf[dead]
			dead++
		}
	}
	evicted, closing := 0, 0
	c.mu.Lock()
	for i, e := range buf {
		e.refs--
		if i < dead && e.refs == 0 && !e.evicted {
			c.evictions.Add(1)
			c.unlinkLocked(e)
			evicted++
		}
		if e.evicted && e.refs == 0 {
			buf[closing] = e // closing <= i: that slot was handled
			closing++
		}
	}
	c.mu.Unlock()
	for _, e := range buf[:closing] {
		c.closeEntry(e)
	}
	clear(buf)
	c.sweepBuf = buf[:0]
	c.sweeps.Add(1)
	return evicted
}

// get returns the entry for handle h with a reference held, or nil.
// It does not allocate.
func (c *fdCache) get(h []byte) *fdEntry {
	c.mu.Lock()
	e := c.m[string(h)]
	if e != nil {
		e.refs++
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	c.mu.Unlock()
	return e
}

// put inserts e (holding one descriptor, e.fd) and returns the cached entry
// for its key with a reference held: e itself, or an entry another
// goroutine inserted first (then e's descriptor is closed). pinned entries
// are never evicted by the LRU.
func (c *fdCache) put(e *fdEntry, pinned bool) *fdEntry {
	e.rfd, e.wfd = -1, -1
	c.open.Add(1)
	c.mu.Lock()
	if old := c.m[e.key]; old != nil {
		old.refs++
		if old.elem != nil {
			c.lru.MoveToFront(old.elem)
		}
		c.mu.Unlock()
		c.closeEntry(e)
		return old
	}
	e.refs = 1
	c.m[e.key] = e
	var kbuf [1 + 4 + osMaxKernel]byte
	e.kkey = string(kernelKeyOf(kbuf[:0], e.fh.Type(), e.fh.Bytes()))
	c.byFH[e.kkey] = e
	c.byIno[e.ino] = e // the newest entry of the inode wins the index
	if !pinned {
		e.elem = c.lru.PushFront(e)
	}
	var victims []*fdEntry
	for c.lru.Len() > c.max {
		v := c.lru.Back().Value.(*fdEntry)
		c.evictions.Add(1)
		if victim := c.unlinkLocked(v); victim != nil {
			victims = append(victims, victim)
		}
	}
	c.mu.Unlock()
	for _, v := range victims {
		c.closeEntry(v)
	}
	return e
}

// known returns the handle of the cached entry whose kernel handle is fh
// (found through inode ino), moved to the front of the LRU, so that an
// object opened again by name (a LOOKUP of a cached file) needs neither a
// new entry nor its handle's MAC; ok false: none is cached. Equal kernel
// handles on the one filesystem name the same inode (generation
// included), so the answer is the one put would give.
func (c *fdCache) known(ino uint64, fh unix.FileHandle) (key string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byIno[ino]
	if e == nil || e.evicted || e.legacy || e.fh.Type() != fh.Type() || string(e.fh.Bytes()) != string(fh.Bytes()) {
		return "", false
	}
	if e.elem != nil {
		c.lru.MoveToFront(e.elem)
	}
	return e.key, true
}

// withHandle returns the cached entry whose kernel handle is fh, with a
// reference held (release it), or nil. Equal kernel handles on the one
// filesystem name the same inode, generation included, so the entry is
// the one resolving fh would give (and put would keep). It counts
// neither a hit nor a miss (the call resolved no vfs handle) and does
// not allocate.
func (c *fdCache) withHandle(fh unix.FileHandle) *fdEntry {
	kb := fh.Bytes()
	if len(kb) > osMaxKernel {
		return nil
	}
	var buf [1 + 4 + osMaxKernel]byte
	k := kernelKeyOf(buf[:0], fh.Type(), kb)
	c.mu.Lock()
	e := c.byFH[string(k)]
	if e != nil && !e.evicted && !e.legacy {
		e.refs++
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
	} else {
		e = nil
	}
	c.mu.Unlock()
	return e
}

// kernelKeyOf appends a kernel handle laid out as the key of
// fdCache.byFH: its length byte, type (big-endian) and bytes, the same
// for every vfs handle layout that names it (and bytes 1 to 6+n of a
// version-1 handle, encodeV1).
func kernelKeyOf(b []byte, typ int32, kb []byte) []byte {
	b = append(b, byte(len(kb)))
	b = binary.BigEndian.AppendUint32(b, uint32(typ))
	return append(b, kb...)
}

// unlinkLocked removes e from the cache and returns it when its
// descriptors can be closed now (no references), else nil: the last
// release closes them.
func (c *fdCache) unlinkLocked(e *fdEntry) *fdEntry {
	if e.evicted {
		return nil
	}
	e.evicted = true
	delete(c.m, e.key)
	if c.byFH[e.kkey] == e {
		delete(c.byFH, e.kkey)
	}
	if c.byIno[e.ino] == e {
		delete(c.byIno, e.ino)
	}
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
	}
	if e.refs == 0 {
		return e
	}
	return nil
}

// release drops a reference taken by get or put.
func (c *fdCache) release(e *fdEntry) {
	c.mu.Lock()
	e.refs--
	done := e.evicted && e.refs == 0
	c.mu.Unlock()
	if done {
		c.closeEntry(e)
	}
}

// drop evicts e (its object is gone).
func (c *fdCache) drop(e *fdEntry) {
	c.mu.Lock()
	v := c.unlinkLocked(e)
	c.mu.Unlock()
	if v != nil {
		c.closeEntry(v)
	}
}

// dropIno evicts the entry of inode ino, if cached.
func (c *fdCache) dropIno(ino uint64) {
	c.mu.Lock()
	var v *fdEntry
	if e := c.byIno[ino]; e != nil {
		v = c.unlinkLocked(e)
	}
	c.mu.Unlock()
	if v != nil {
		c.closeEntry(v)
	}
}

// closeAll evicts every entry, the pinned ones included.
func (c *fdCache) closeAll() {
	c.mu.Lock()
	var victims []*fdEntry
	for _, e := range c.m {
		if v := c.unlinkLocked(e); v != nil {
			victims = append(victims, v)
		}
	}
	c.mu.Unlock()
	for _, v := range victims {
		c.closeEntry(v)
	}
}

// closeEntry closes e's descriptors; called once, with no references left.
func (c *fdCache) closeEntry(e *fdEntry) {
	for _, fd := range [...]int{e.fd, e.rfd, e.wfd} {
		if fd >= 0 {
			unix.Close(fd)
			c.open.Add(-1)
		}
	}
	e.fd, e.rfd, e.wfd = -1, -1, -1
}

// OpenFileCache implements vfs.OpenFileCacher: the handle cache's
// counters (a lookup is a hit or a miss; a miss that resolves the handle
// inserts an entry).
func (f *FS) OpenFileCache() vfs.CacheCounts {
	c := f.cache
	return vfs.CacheCounts{Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load(), Open: c.open.Load()}
}
