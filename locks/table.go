package locks

import (
	"errors"
	"math"
	"sync"
)

// MaxOffset is the last byte a lock can cover: a range ending here runs to
// end of file and beyond (Linux's OFFSET_MAX).
const MaxOffset = math.MaxInt64

// Owner identifies a lock owner. Host names the client (the NLM server
// builds it from caller_name and the caller's address); SVID and OH are
// the client's process id and owner handle.
type Owner struct {
	Host string
	SVID int32
	OH   string
}

// Lock is one byte-range lock, or a request for one: the inclusive range
// [Start, End] with 0 <= Start <= End <= MaxOffset.
type Lock struct {
	Owner     Owner
	Exclusive bool
	Start     int64
	End       int64
}

func (l *Lock) overlaps(m *Lock) bool { return l.Start <= m.End && m.Start <= l.End }

// conflicts reports whether l and m cannot both be held: other owners,
// overlapping ranges, at least one exclusive.
func (l *Lock) conflicts(m *Lock) bool {
	return l.Owner != m.Owner && (l.Exclusive || m.Exclusive) && l.overlaps(m)
}

// Valid reports whether the range is well formed.
func (l *Lock) Valid() bool { return l.Start >= 0 && l.Start <= l.End }

// Status is the outcome of a lock request.
type Status int

// Outcomes.
const (
	Granted  Status = iota
	Denied          // a conflicting lock is held
	Blocked         // queued; Config.Granted is called when it is granted
	NoLocks         // the table is full
	Deadlock        // blocking would close a cycle of owners waiting for each other
)

func (s Status) String() string {
	switch s {
	case Granted:
		return "granted"
	case Denied:
		return "denied"
	case Blocked:
		return "blocked"
	case NoLocks:
		return "no locks"
	case Deadlock:
		return "deadlock"
	}
	return "unknown"
}

// Backing mirrors a file's locks on the storage that holds the file, so
// that other users of it (processes on the server host) see them. Calls
// are made with the table's mutex held and must not block.
type Backing interface {
	// Lock takes l for its owner without waiting, replacing the owner's
	// locks on the range as the table does. ok is false when someone
	// outside the table holds a conflicting lock.
	Lock(l Lock) (ok bool, err error)
	// Unlock releases owner's locks on [start, end]; last says the owner
	// holds nothing on the file any more.
	Unlock(owner Owner, start, end int64, last bool) error
	// Test returns a lock held outside the table that conflicts with l.
	Test(l Lock) (conflict Lock, found bool, err error)
	// Close releases every lock the backing holds.
	Close() error
}

// ErrBacking wraps a failure of a file's Backing.
var ErrBacking = errors.New("locks: backing store failed")

// Waiter is a queued blocking request.
type Waiter struct {
	File   string
	Lock   Lock
	Cookie any // the caller's, handed back by Config.Granted
	// external: the last attempt was refused by the backing only, so
	// Poll retries it.
	external bool
}

// Config configures a Table.
type Config struct {
	// MaxLocks bounds locks + waiters + shares in the table; 0 means
	// 1<<16.
	MaxLocks int
	// Granted is told of every waiter the table grants, in grant order,
	// after the mutex is released. Required when blocking requests are
	// used.
	Granted func(w *Waiter)
}

// Table is the lock table. It is safe for concurrent use.
type Table struct {
	cfg   Config
	mu    sync.Mutex
	files map[string]*file
	count int // locks + waiters + shares
}

type file struct {
	locks   []Lock
	waiters []*Waiter
	shares  []Share
	backing Backing
}

func (f *file) empty() bool { return len(f.locks) == 0 && len(f.waiters) == 0 && len(f.shares) == 0 }

// New returns an empty table.
func New(cfg Config) *Table {
	if cfg.MaxLocks <= 0 {
		cfg.MaxLocks = 1 << 16
	}
	return &Table{cfg: cfg, files: make(map[string]*file)}
}

// Opener returns the Backing of a file, nil when the file's storage
// cannot hold locks itself (then the table is the only holder). The table
// calls it with its mutex held when a file gets its first entry, and for
// a Test of a file it holds nothing on. A nil Opener means no backing.
type Opener func() (Backing, error)

// get returns file's entry, creating it (and opening its backing) when
// open is not nil.
func (t *Table) get(name string, create bool, open Opener) (*file, error) {
	f := t.files[name]
	if f != nil || !create {
		return f, nil
	}
	f = &file{}
	if open != nil {
		b, err := open()
		if err != nil {
			return nil, err
		}
		f.backing = b
	}
	t.files[name] = f
	return f, nil
}

// tidy drops an empty file entry and closes its backing.
func (t *Table) tidy(name string, f *file) {
	if !f.empty() {
		return
	}
	delete(t.files, name)
	if f.backing != nil {
		f.backing.Close()
	}
}

// conflict returns the first lock in f held by another owner that
// conflicts with l.
func (f *file) conflict(l *Lock) (Lock, bool) {
	for i := range f.locks {
		if f.locks[i].conflicts(l) {
			return f.locks[i], true
		}
	}
	return Lock{}, false
}

// Test reports a lock that would conflict with l: one in the table, or
// one the file's backing knows of (held outside the table).
func (t *Table) Test(name string, l Lock, open Opener) (Lock, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[name]
	if f != nil {
		if c, ok := f.conflict(&l); ok {
			return c, true, nil
		}
	}
	b, temporary, err := backingFor(f, open)
	if err != nil || b == nil {
		return Lock{}, false, err
	}
	if temporary {
		defer b.Close()
	}
	c, found, err := b.Test(l)
	if err != nil {
		return Lock{}, false, errors.Join(ErrBacking, err)
	}
	return c, found, nil
}

// backingFor returns f's backing, or a temporary one for a file the
// table holds nothing on.
func backingFor(f *file, open Opener) (Backing, bool, error) {
	if f != nil {
		return f.backing, false, nil
	}
	if open == nil {
		return nil, false, nil
	}
	b, err := open()
	return b, true, err
}

// Lock asks for l on file name. Without a conflict it is granted (and
// replaces the owner's locks on the range). With one, it is Denied with
// the conflicting lock, or, when block is set, queued and Blocked; a
// request equal to one already queued (same owner, type and range) is
// Blocked again without queueing twice. The conflicting lock is zero when
// the holder is outside the table.
func (t *Table) Lock(name string, l Lock, block bool, cookie any, open Opener) (Status, Lock, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, err := t.get(name, true, open)
	if err != nil {
		return Denied, Lock{}, err
	}
	defer t.tidy(name, f)
	st, c, err := t.try(f, &l)
	if err != nil || st != Denied || !block {
		return st, c, err
	}
	for _, w := range f.waiters {
		if w.Lock == l {
			w.Cookie = cookie
			return Blocked, c, nil
		}
	}
	if t.deadlock(f, &l) {
		return Deadlock, c, nil
	}
	if t.count+1 > t.cfg.MaxLocks {
		return NoLocks, c, nil
	}
	w := &Waiter{File: name, Lock: l, Cookie: cookie, external: c == (Lock{})}
	f.waiters = append(f.waiters, w)
	t.count++
	return Blocked, c, nil
}

// deadlock reports whether l's owner waiting on f would close a cycle:
// an owner holding a lock that conflicts with l waits, directly or
// through other waiting owners, for a lock l's owner holds (as the Linux
// kernel's posix_locks_deadlock, over every file of the table).
func (t *Table) deadlock(f *file, l *Lock) bool {
	seen := map[Owner]bool{}
	var next []Owner
	push := func(f *file, w *Lock) {
		for i := range f.locks {
			if o := f.locks[i].Owner; f.locks[i].conflicts(w) && !seen[o] {
				seen[o] = true
				next = append(next, o)
			}
		}
	}
	push(f, l)
	for len(next) > 0 {
		o := next[len(next)-1]
		next = next[:len(next)-1]
		if o == l.Owner {
			return true
		}
		for _, g := range t.files {
			for _, w := range g.waiters {
				if w.Lock.Owner == o {
					push(g, &w.Lock)
				}
			}
		}
	}
	return false
}

// try grants l on f if nothing conflicts, mirroring it on the backing.
func (t *Table) try(f *file, l *Lock) (Status, Lock, error) {
	if c, ok := f.conflict(l); ok {
		return Denied, c, nil
	}
	next := apply(f.locks, *l)
	if t.count+len(next)-len(f.locks) > t.cfg.MaxLocks {
		return NoLocks, Lock{}, nil
	}
	if f.backing != nil {
		ok, err := f.backing.Lock(*l)
		if err != nil {
			return Denied, Lock{}, errors.Join(ErrBacking, err)
		}
		if !ok {
			return Denied, Lock{}, nil
		}
	}
	t.count += len(next) - len(f.locks)
	f.locks = next
	return Granted, Lock{}, nil
}

// Unlock releases owner's locks on [start, end] of file name (nothing
// held is not an error) and grants waiters that no longer conflict.
func (t *Table) Unlock(name string, owner Owner, start, end int64) error {
	granted, err := t.unlock(name, owner, start, end)
	t.notify(granted)
	return err
}

func (t *Table) unlock(name string, owner Owner, start, end int64) ([]*Waiter, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[name]
	if f == nil {
		return nil, nil
	}
	defer t.tidy(name, f)
	next := remove(f.locks, owner, start, end)
	var err error
	if f.backing != nil {
		if e := f.backing.Unlock(owner, start, end, !holds(next, owner)); e != nil {
			err = errors.Join(ErrBacking, e)
		}
	}
	t.count += len(next) - len(f.locks)
	f.locks = next
	return t.wake(f), err
}

// wake grants, in queue order, every waiter of f that no longer
// conflicts, and returns them.
func (t *Table) wake(f *file) []*Waiter {
	var granted []*Waiter
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		st, c, err := t.try(f, &w.Lock)
		if st == Granted && err == nil {
			t.count--
			granted = append(granted, w)
			continue
		}
		w.external = st == Denied && c == (Lock{}) && err == nil
		kept = append(kept, w)
	}
	clear(f.waiters[len(kept):])
	f.waiters = kept
	return granted
}

func (t *Table) notify(granted []*Waiter) {
	for _, w := range granted {
		if t.cfg.Granted != nil {
			t.cfg.Granted(w)
		}
	}
}

// Cancel removes the queued request equal to l (owner, type and range)
// from file name's queue and reports whether there was one.
func (t *Table) Cancel(name string, l Lock) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[name]
	if f == nil {
		return false
	}
	defer t.tidy(name, f)
	for i, w := range f.waiters {
		if w.Lock == l {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			t.count--
			return true
		}
	}
	return false
}

// Poll retries every waiter whose last attempt was refused by a backing
// only (the holder is outside the table, which sees no unlock).
func (t *Table) Poll() {
	t.mu.Lock()
	var granted []*Waiter
	for name, f := range t.files {
		retry := false
		for _, w := range f.waiters {
			retry = retry || w.external
		}
		if retry {
			granted = append(granted, t.wake(f)...)
			t.tidy(name, f)
		}
	}
	t.mu.Unlock()
	t.notify(granted)
}

// ReleaseHost drops every lock, waiter and share of host (FREE_ALL, a
// reboot notification) and grants the waiters that frees.
func (t *Table) ReleaseHost(host string) int {
	return t.ReleaseHosts(func(h string) bool { return h == host })
}

// ReleaseHosts is ReleaseHost for every host match selects.
func (t *Table) ReleaseHosts(match func(host string) bool) int {
	return t.release(func(string) bool { return true }, func(o Owner) bool { return match(o.Host) })
}

// ReleaseFiles drops everything on the files match selects (an export
// that went away). Waiters on them are dropped, not granted.
func (t *Table) ReleaseFiles(match func(name string) bool) int {
	return t.release(match, func(Owner) bool { return true })
}

// ReleaseAll drops everything (a simulated crash).
func (t *Table) ReleaseAll() int {
	return t.ReleaseFiles(func(string) bool { return true })
}

func (t *Table) release(fileMatch func(string) bool, ownerMatch func(Owner) bool) int {
	t.mu.Lock()
	var granted []*Waiter
	n := 0
	for name, f := range t.files {
		if !fileMatch(name) {
			continue
		}
		locks := f.locks[:0]
		gone := map[Owner]bool{}
		for _, l := range f.locks {
			if ownerMatch(l.Owner) {
				gone[l.Owner] = true
				n++
				continue
			}
			locks = append(locks, l)
		}
		if f.backing != nil {
			for o := range gone {
				f.backing.Unlock(o, 0, MaxOffset, true)
			}
		}
		clear(f.locks[len(locks):])
		f.locks = locks
		waiters := f.waiters[:0]
		for _, w := range f.waiters {
			if ownerMatch(w.Lock.Owner) {
				n++
				continue
			}
			waiters = append(waiters, w)
		}
		clear(f.waiters[len(waiters):])
		f.waiters = waiters
		shares := f.shares[:0]
		for _, s := range f.shares {
			if ownerMatch(Owner{Host: s.Host}) {
				n++
				continue
			}
			shares = append(shares, s)
		}
		f.shares = shares
		granted = append(granted, t.wake(f)...)
		t.tidy(name, f)
	}
	t.count = t.recount()
	t.mu.Unlock()
	t.notify(granted)
	return n
}

// holds reports whether owner has a lock in locks.
func holds(locks []Lock, owner Owner) bool {
	for i := range locks {
		if locks[i].Owner == owner {
			return true
		}
	}
	return false
}

// recount recomputes count from the files (after bulk changes).
func (t *Table) recount() int {
	n := 0
	for _, f := range t.files {
		n += len(f.locks) + len(f.waiters) + len(f.shares)
	}
	return n
}

// Locks returns a copy of the locks held on file name, ordered by owner
// and start.
func (t *Table) Locks(name string) []Lock {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[name]
	if f == nil {
		return nil
	}
	return append([]Lock(nil), f.locks...)
}

// Waiters returns a copy of file name's queue, in order.
func (t *Table) Waiters(name string) []Waiter {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[name]
	if f == nil {
		return nil
	}
	out := make([]Waiter, len(f.waiters))
	for i, w := range f.waiters {
		out[i] = *w
	}
	return out
}

// HostBusy reports whether host holds or waits for anything.
func (t *Table) HostBusy(host string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.files {
		for _, l := range f.locks {
			if l.Owner.Host == host {
				return true
			}
		}
		for _, w := range f.waiters {
			if w.Lock.Owner.Host == host {
				return true
			}
		}
		for _, s := range f.shares {
			if s.Host == host {
				return true
			}
		}
	}
	return false
}

// BusyHosts returns the set of hosts that hold or wait for anything.
func (t *Table) BusyHosts() map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	busy := map[string]bool{}
	for _, f := range t.files {
		for _, l := range f.locks {
			busy[l.Owner.Host] = true
		}
		for _, w := range f.waiters {
			busy[w.Lock.Owner.Host] = true
		}
		for _, s := range f.shares {
			busy[s.Host] = true
		}
	}
	return busy
}

// Len returns locks + waiters + shares in the table.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// Files returns the number of files with table entries.
func (t *Table) Files() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.files)
}

// apply returns locks with l added for its owner: the owner's locks on
// l's range are replaced, and the owner's locks of l's type that touch or
// overlap it merge with it. The result is a new slice.
func apply(locks []Lock, l Lock) []Lock {
	out := remove(locks, l.Owner, l.Start, l.End)
	merged := l
	kept := out[:0]
	for _, m := range out {
		if m.Owner == l.Owner && m.Exclusive == l.Exclusive && touches(&m, &merged) {
			merged.Start = min(merged.Start, m.Start)
			merged.End = max(merged.End, m.End)
			continue
		}
		kept = append(kept, m)
	}
	return append(kept, merged)
}

// touches reports whether a and b overlap or are adjacent.
func touches(a, b *Lock) bool {
	return (a.End == MaxOffset || a.End+1 >= b.Start) && (b.End == MaxOffset || b.End+1 >= a.Start)
}

// remove returns a new slice of locks without owner's coverage of
// [start, end], splitting locks that extend past it.
func remove(locks []Lock, owner Owner, start, end int64) []Lock {
	out := make([]Lock, 0, len(locks)+1)
	for _, m := range locks {
		if m.Owner != owner || m.End < start || m.Start > end {
			out = append(out, m)
			continue
		}
		if m.Start < start {
			left := m
			left.End = start - 1
			out = append(out, left)
		}
		if m.End > end {
			right := m
			right.Start = end + 1
			out = append(out, right)
		}
	}
	return out
}
