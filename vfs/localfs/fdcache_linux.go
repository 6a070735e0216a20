package localfs

import (
	"container/list"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Buffer and descriptor ownership: every descriptor in this file belongs to
// the fdCache. An fdEntry is handed to an FS method by acquire with a
// reference held; the method may use the entry's descriptors until it calls
// release, and must never close them. Eviction (LRU overflow, invalidation,
// Close) unlinks the entry at once and closes its descriptors when the last
// reference is released, so an in-flight pread never sees a recycled fd.

// fdEntry is one cached file object of the OS backend.
type fdEntry struct {
	key  string          // the vfs handle bytes
	fh   unix.FileHandle // the kernel handle, to reopen for I/O
	fd   int             // O_PATH (or any) descriptor naming the object
	ino  uint64          // st_ino, for invalidation on unlink
	typ  vfs.FileType    // immutable for an inode
	elem *list.Element   // position in the LRU; nil for the pinned root

	mu  sync.Mutex // guards rfd and wfd while opening them lazily
	rfd int        // O_RDONLY descriptor of a regular file, -1 until needed
	wfd int        // O_RDWR descriptor of a regular file, -1 until needed

	// verified is the rename epoch (moveWatch) at which the object was
	// last found inside the export; 0: never.
	verified atomic.Uint64

	refs    int  // under fdCache.mu
	evicted bool // under fdCache.mu
}

// fdCache is a bounded LRU of fdEntry keyed by handle.
type fdCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]*fdEntry
	byIno map[uint64]*fdEntry
	lru   list.List
	open  atomic.Int64 // descriptors currently held by entries

	// Counters for the metrics, added under mu, read without it.
	hits, misses, evictions atomic.Uint64
}

func newFDCache(max int) *fdCache {
	return &fdCache{max: max, m: make(map[string]*fdEntry), byIno: make(map[uint64]*fdEntry)}
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

// unlinkLocked removes e from the cache and returns it when its
// descriptors can be closed now (no references), else nil: the last
// release closes them.
func (c *fdCache) unlinkLocked(e *fdEntry) *fdEntry {
	if e.evicted {
		return nil
	}
	e.evicted = true
	delete(c.m, e.key)
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
