package oncrpc

import (
	"hash/crc32"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// DRC is the duplicate request cache: it remembers the replies to
// non-idempotent calls so a retransmission (after a lost reply or a
// reconnect) gets the original answer instead of running twice.
//
// Entries are keyed by XID, program, version, procedure, the client's IP
// address (never its port: the port changes across reconnects) and a
// checksum of the arguments. Memory is bounded by an entry count and a byte
// budget, with least-recently-used eviction and a time-to-live. The cache
// stores the flattened RPC reply, never transport framing.
//
// Entries dropped from the cache are kept on a short spare list and
// reused, with their reply buffers, by the next calls (a full cache drops
// one entry for each call it takes). A replay is therefore copied out of
// the cache under its lock (begin), never handed out by reference.
type DRC struct {
	mu         sync.Mutex
	entries    map[drcKey]*drcEntry
	head       drcEntry // sentinel of the LRU ring; head.next is the oldest
	bytes      int
	maxEntries int
	maxBytes   int
	ttl        time.Duration
	now        func() time.Time
	spare      *drcEntry // entries to reuse, linked by next
	spares     int

	// Counters for the metrics, written under mu, read without it.
	hits, drops, misses, evictions atomic.Uint64
}

type drcKey struct {
	xid, prog, vers, proc uint32
	addr                  netip.Addr
	argLen                uint32
	argSum                uint32
}

type drcEntry struct {
	key  drcKey
	done bool
	// reply is the flattened reply; its capacity is what the entry
	// holds and what the byte budget counts.
	reply      []byte
	at         time.Time
	prev, next *drcEntry
}

type drcAction int

const (
	drcRun drcAction = iota
	drcReplay
	drcDrop
)

// NewDRC returns a cache holding at most maxEntries replies and maxBytes of
// reply data, each for at most ttl.
func NewDRC(maxEntries, maxBytes int, ttl time.Duration) *DRC {
	c := &DRC{entries: make(map[drcKey]*drcEntry), maxEntries: maxEntries, maxBytes: maxBytes, ttl: ttl, now: time.Now}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
}

func newDRCKey(call *Call) drcKey {
	return drcKey{
		xid: call.XID, prog: call.Prog, vers: call.Vers, proc: call.Proc,
		addr:   call.Conn.Remote.Addr().Unmap(),
		argLen: uint32(len(call.Args)),
		argSum: crc32.ChecksumIEEE(call.Args),
	}
}

// DRCCounts are the cache's counters since it was made.
type DRCCounts struct {
	// Hits are retransmissions answered from the cache; Drops are
	// retransmissions of a call still in progress, not answered; Misses
	// are calls run and then cached; Evictions are replies dropped for
	// the cache's bounds or their age.
	Hits, Drops, Misses, Evictions uint64
}

// Counts reads the counters.
func (c *DRC) Counts() DRCCounts {
	return DRCCounts{Hits: c.hits.Load(), Drops: c.drops.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load()}
}

// Len returns the number of cached entries (in progress or done).
func (c *DRC) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func (c *DRC) unlink(e *drcEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *DRC) pushNewest(e *drcEntry) {
	e.prev, e.next = c.head.prev, &c.head
	c.head.prev.next = e
	c.head.prev = e
}

// maxSpares bounds the spare list: enough for the entries one call's
// evict drops at a time.
const maxSpares = 8

func (c *DRC) remove(e *drcEntry) {
	c.unlink(e)
	delete(c.entries, e.key)
	if e.done {
		// only a finished entry's buffer is counted: one in progress
		// may hold a spare's buffer that finish has not counted yet
		c.bytes -= cap(e.reply)
	}
	if c.spares < maxSpares {
		*e = drcEntry{reply: e.reply[:0], next: c.spare}
		c.spare = e
		c.spares++
	}
}

// newEntry returns a spare entry (with its reply buffer) or a new one,
// for key, in progress since now.
func (c *DRC) newEntry(key drcKey, now time.Time) *drcEntry {
	e := c.spare
	if e == nil {
		return &drcEntry{key: key, at: now}
	}
	c.spare, c.spares = e.next, c.spares-1
	e.key, e.at, e.next = key, now, nil
	return e
}

// begin looks key up. A finished entry is replayed (its reply appended to
// dst, which begin returns), one in progress makes the retransmission be
// dropped, and a miss inserts an in-progress entry.
func (c *DRC) begin(key drcKey, dst []byte) (drcAction, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if e, ok := c.entries[key]; ok {
		if now.Sub(e.at) <= c.ttl || !e.done {
			if !e.done {
				c.drops.Add(1)
				return drcDrop, nil
			}
			c.unlink(e)
			c.pushNewest(e)
			c.hits.Add(1)
			return drcReplay, append(dst, e.reply...)
		}
		c.remove(e)
		c.evictions.Add(1)
	}
	c.misses.Add(1)
	c.evict(now)
	e := c.newEntry(key, now)
	c.entries[key] = e
	c.pushNewest(e)
	return drcRun, nil
}

// finish stores the reply for key. The reply is copied.
func (c *DRC) finish(key drcKey, r *Reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return
	}
	n := r.Len()
	if n > c.maxBytes/4 || r.spliced > 0 {
		c.remove(e) // too large to be worth caching, or not in memory
		return
	}
	// A reused buffer is kept only while it is not much larger than the
	// reply: the budget counts capacity, and a few large replies must not
	// leave every later entry holding their size.
	if cap(e.reply) < n || cap(e.reply) > 2*n {
		e.reply = make([]byte, 0, n)
	}
	e.reply = r.AppendFlat(e.reply[:0])
	e.done = true
	e.at = c.now()
	c.bytes += cap(e.reply)
	c.evict(e.at)
}

// evict drops expired entries and then the oldest finished ones until the
// cache is within its bounds. Entries in progress are never evicted by size
// (their number is bounded by the calls in flight).
func (c *DRC) evict(now time.Time) {
	for e := c.head.next; e != &c.head; {
		next := e.next
		over := len(c.entries) > c.maxEntries || c.bytes > c.maxBytes
		expired := e.done && now.Sub(e.at) > c.ttl
		if !over && !expired {
			break
		}
		if e.done {
			c.remove(e)
			c.evictions.Add(1)
		}
		e = next
	}
}
