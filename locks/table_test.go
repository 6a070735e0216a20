package locks

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

var (
	alice = Owner{Host: "a", SVID: 1, OH: "a1"}
	alic2 = Owner{Host: "a", SVID: 2, OH: "a2"}
	bob   = Owner{Host: "b", SVID: 1, OH: "b1"}
)

func lk(o Owner, excl bool, start, end int64) Lock {
	return Lock{Owner: o, Exclusive: excl, Start: start, End: end}
}

func mustLock(t *testing.T, tb *Table, l Lock, want Status) Lock {
	t.Helper()
	st, c, err := tb.Lock("f", l, false, nil, nil)
	if err != nil || st != want {
		t.Fatalf("Lock(%+v) = %v, %v; want %v", l, st, err, want)
	}
	return c
}

func sorted(ls []Lock) []Lock {
	slices.SortFunc(ls, func(a, b Lock) int {
		if a.Owner.Host != b.Owner.Host {
			if a.Owner.Host < b.Owner.Host {
				return -1
			}
			return 1
		}
		if a.Owner.SVID != b.Owner.SVID {
			return int(a.Owner.SVID - b.Owner.SVID)
		}
		if a.Start < b.Start {
			return -1
		}
		if a.Start > b.Start {
			return 1
		}
		return 0
	})
	return ls
}

func TestSplitMergeConvert(t *testing.T) {
	tb := New(Config{})
	mustLock(t, tb, lk(alice, true, 0, 99), Granted)
	// A shared lock in the middle splits the exclusive one in three.
	mustLock(t, tb, lk(alice, false, 40, 59), Granted)
	want := []Lock{lk(alice, true, 0, 39), lk(alice, false, 40, 59), lk(alice, true, 60, 99)}
	if got := sorted(tb.Locks("f")); !slices.Equal(got, want) {
		t.Fatalf("after split: %+v", got)
	}
	// Converting it back merges everything into one lock.
	mustLock(t, tb, lk(alice, true, 40, 59), Granted)
	if got := tb.Locks("f"); !slices.Equal(got, []Lock{lk(alice, true, 0, 99)}) {
		t.Fatalf("after merge: %+v", got)
	}
	// Adjacent ranges of one type merge; to-EOF stays to EOF.
	mustLock(t, tb, lk(alice, true, 100, MaxOffset), Granted)
	if got := tb.Locks("f"); !slices.Equal(got, []Lock{lk(alice, true, 0, MaxOffset)}) {
		t.Fatalf("after adjacent: %+v", got)
	}
	// Unlocking a hole splits.
	if err := tb.Unlock("f", alice, 10, 19); err != nil {
		t.Fatal(err)
	}
	if got := sorted(tb.Locks("f")); !slices.Equal(got, []Lock{lk(alice, true, 0, 9), lk(alice, true, 20, MaxOffset)}) {
		t.Fatalf("after hole: %+v", got)
	}
	if tb.Len() != 2 {
		t.Fatalf("Len %d", tb.Len())
	}
}

func TestConflictsAndUpgradeDenied(t *testing.T) {
	tb := New(Config{})
	mustLock(t, tb, lk(alice, false, 0, 9), Granted)
	mustLock(t, tb, lk(bob, false, 5, 14), Granted) // shared + shared
	c := mustLock(t, tb, lk(bob, true, 0, 14), Denied)
	if c != lk(alice, false, 0, 9) {
		t.Fatalf("conflict %+v", c)
	}
	// The refused upgrade left bob's shared lock as it was.
	if got := sorted(tb.Locks("f")); !slices.Equal(got, []Lock{lk(alice, false, 0, 9), lk(bob, false, 5, 14)}) {
		t.Fatalf("after refused upgrade: %+v", got)
	}
	// Another process of the same host is another owner.
	mustLock(t, tb, lk(alic2, true, 3, 3), Denied)
	mustLock(t, tb, lk(alic2, true, 15, 20), Granted)
	if _, found, _ := tb.Test("f", lk(bob, false, 16, 16), nil); !found {
		t.Fatal("Test missed the exclusive lock")
	}
	if _, found, _ := tb.Test("f", lk(alic2, true, 16, 16), nil); found {
		t.Fatal("an owner conflicts with itself")
	}
}

func TestBlockedGrantedInOrderAndCancel(t *testing.T) {
	var got []string
	tb := New(Config{Granted: func(w *Waiter) { got = append(got, w.Cookie.(string)) }})
	mustLock(t, tb, lk(alice, true, 0, MaxOffset), Granted)
	for i, o := range []Owner{bob, alic2, {Host: "c", SVID: 9}} {
		st, _, err := tb.Lock("f", lk(o, true, 0, 0), true, fmt.Sprint(i), nil)
		if err != nil || st != Blocked {
			t.Fatalf("waiter %d: %v %v", i, st, err)
		}
	}
	// A repeated request does not queue twice.
	if st, _, _ := tb.Lock("f", lk(bob, true, 0, 0), true, "0", nil); st != Blocked || len(tb.Waiters("f")) != 3 {
		t.Fatalf("re-poll: %v, %d waiters", st, len(tb.Waiters("f")))
	}
	if !tb.Cancel("f", lk(alic2, true, 0, 0)) || tb.Cancel("f", lk(alic2, true, 0, 0)) {
		t.Fatal("cancel")
	}
	tb.Unlock("f", alice, 0, MaxOffset)
	if !slices.Equal(got, []string{"0"}) {
		t.Fatalf("granted %v", got)
	}
	tb.Unlock("f", bob, 0, MaxOffset)
	if !slices.Equal(got, []string{"0", "2"}) {
		t.Fatalf("granted %v", got)
	}
}

func TestReleaseHostGrantsOthers(t *testing.T) {
	var n int
	tb := New(Config{Granted: func(*Waiter) { n++ }})
	mustLock(t, tb, lk(alice, true, 0, 10), Granted)
	mustLock(t, tb, lk(alic2, true, 20, 30), Granted)
	tb.Lock("f", lk(bob, true, 0, 30), true, nil, nil)
	if got := tb.ReleaseHost("a"); got != 2 || n != 1 {
		t.Fatalf("released %d, granted %d", got, n)
	}
	if tb.HostBusy("a") || !tb.HostBusy("b") || tb.Len() != 1 {
		t.Fatal("host state after release")
	}
	tb.ReleaseAll()
	if tb.Len() != 0 || tb.Files() != 0 {
		t.Fatalf("after ReleaseAll: %d entries, %d files", tb.Len(), tb.Files())
	}
}

func TestMaxLocks(t *testing.T) {
	tb := New(Config{MaxLocks: 2})
	mustLock(t, tb, lk(alice, true, 0, 0), Granted)
	mustLock(t, tb, lk(alice, true, 2, 2), Granted)
	mustLock(t, tb, lk(alice, true, 4, 4), NoLocks)
	mustLock(t, tb, lk(alice, true, 1, 1), Granted) // merges: fewer locks
	if tb.Len() != 1 {
		t.Fatalf("Len %d", tb.Len())
	}
}

func TestShares(t *testing.T) {
	tb := New(Config{})
	if st, _ := tb.Share("f", Share{Host: "a", OH: "1", Mode: ShareWrite, Access: ShareRead}, nil); st != Granted {
		t.Fatal(st)
	}
	if st, _ := tb.Share("f", Share{Host: "b", OH: "1", Mode: 0, Access: ShareWrite}, nil); st != Denied {
		t.Fatalf("write against deny-write: %v", st)
	}
	if st, _ := tb.Share("f", Share{Host: "b", OH: "1", Mode: ShareRead, Access: ShareRead}, nil); st != Denied {
		t.Fatalf("deny-read against a reader: %v", st)
	}
	if st, _ := tb.Share("f", Share{Host: "b", OH: "1", Mode: 0, Access: ShareRead}, nil); st != Granted {
		t.Fatal(st)
	}
	tb.Unshare("f", "a", "1")
	tb.Unshare("f", "b", "1")
	if tb.Len() != 0 || tb.Files() != 0 {
		t.Fatal("shares left")
	}
}

// fakeBacking is a backing with an outside holder of byte 1000.
type fakeBacking struct {
	held   map[Owner][]Lock
	ext    bool
	closed *int
}

func (b *fakeBacking) outside(l Lock) bool { return b.ext && l.Start <= 1000 && l.End >= 1000 }
func (b *fakeBacking) Lock(l Lock) (bool, error) {
	if b.outside(l) {
		return false, nil
	}
	b.held[l.Owner] = apply(b.held[l.Owner], l)
	return true, nil
}
func (b *fakeBacking) Unlock(o Owner, s, e int64, _ bool) error {
	b.held[o] = remove(b.held[o], o, s, e)
	return nil
}
func (b *fakeBacking) Test(l Lock) (Lock, bool, error) {
	if b.outside(l) {
		return Lock{Exclusive: true, Start: 1000, End: 1000}, true, nil
	}
	return Lock{}, false, nil
}
func (b *fakeBacking) Close() error { *b.closed++; return nil }

func TestBackingMirrorAndPoll(t *testing.T) {
	closed := 0
	var cur *fakeBacking
	var granted int
	open := func() (Backing, error) {
		cur = &fakeBacking{held: map[Owner][]Lock{}, ext: true, closed: &closed}
		return cur, nil
	}
	tb := New(Config{Granted: func(*Waiter) { granted++ }})
	if _, found, _ := tb.Test("f", lk(bob, false, 0, MaxOffset), open); !found || closed != 1 {
		t.Fatalf("Test through a temporary backing: found=%v closed=%d", found, closed)
	}
	if st, _, _ := tb.Lock("f", lk(alice, true, 0, 10), false, nil, open); st != Granted {
		t.Fatal(st)
	}
	if !slices.Equal(cur.held[alice], []Lock{lk(alice, true, 0, 10)}) {
		t.Fatalf("backing holds %+v", cur.held)
	}
	if st, _, _ := tb.Lock("f", lk(alice, true, 990, 1010), false, nil, open); st != Denied {
		t.Fatal(st)
	}
	if st, _, _ := tb.Lock("f", lk(bob, true, 1000, 1000), true, nil, open); st != Blocked {
		t.Fatal(st)
	}
	tb.Poll()
	if granted != 0 {
		t.Fatal("granted while the outside holder holds")
	}
	cur.ext = false
	tb.Poll()
	if granted != 1 {
		t.Fatal("Poll did not grant")
	}
	tb.Unlock("f", alice, 0, MaxOffset)
	tb.Unlock("f", bob, 0, MaxOffset)
	if closed != 2 || tb.Files() != 0 {
		t.Fatalf("backing closed %d times, %d files", closed, tb.Files())
	}
}

// model is the reference: per owner, the lock type of each byte of a
// small file, byte modelSize standing for every offset beyond.
const modelSize = 17

type model map[Owner]*[modelSize]int8 // 0 none, 1 shared, 2 exclusive

func span(l Lock) (int, int) {
	e := int(min(l.End, modelSize-1))
	return int(l.Start), e
}

func (m model) conflict(l Lock) bool {
	s, e := span(l)
	for o, b := range m {
		if o == l.Owner {
			continue
		}
		for i := s; i <= e; i++ {
			if b[i] == 2 || (b[i] == 1 && l.Exclusive) {
				return true
			}
		}
	}
	return false
}

func (m model) set(o Owner, s, e int, v int8) {
	b := m[o]
	if b == nil {
		b = new([modelSize]int8)
		m[o] = b
	}
	for i := s; i <= e; i++ {
		b[i] = v
	}
}

// TestModel drives the table and the reference with random operations and
// compares the byte coverage, the normal form (no overlapping or mergeable
// ranges of one owner) and every answer.
func TestModel(t *testing.T) {
	owners := []Owner{alice, alic2, bob}
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		tb := New(Config{})
		ref := model{}
		for step := 0; step < 200; step++ {
			o := owners[r.IntN(len(owners))]
			start := int64(r.IntN(modelSize - 1))
			end := min(start+int64(r.IntN(4)), modelSize-2)
			if r.IntN(5) == 0 {
				end = MaxOffset
			}
			l := lk(o, r.IntN(2) == 0, start, end)
			s, e := span(l)
			switch r.IntN(3) {
			case 0, 1:
				st, _, _ := tb.Lock("f", l, false, nil, nil)
				if want := ref.conflict(l); (st == Denied) != want {
					t.Fatalf("seed %d step %d: Lock(%+v) = %v, reference conflict %v", seed, step, l, st, want)
				}
				if st == Granted {
					v := int8(1)
					if l.Exclusive {
						v = 2
					}
					ref.set(o, s, e, v)
				}
			case 2:
				tb.Unlock("f", o, l.Start, l.End)
				ref.set(o, s, e, 0)
			}
			if _, found, _ := tb.Test("f", l, nil); found != ref.conflict(l) {
				t.Fatalf("seed %d step %d: Test(%+v) = %v", seed, step, l, found)
			}
			check(t, seed, step, tb.Locks("f"), ref)
		}
	}
}

func check(t *testing.T, seed uint64, step int, got []Lock, ref model) {
	t.Helper()
	cover := model{}
	for _, l := range got {
		if !l.Valid() {
			t.Fatalf("seed %d step %d: invalid %+v", seed, step, l)
		}
		for _, m := range got {
			if l != m && l.Owner == m.Owner && (l.overlaps(&m) || (l.Exclusive == m.Exclusive && touches(&l, &m))) {
				t.Fatalf("seed %d step %d: not normal: %+v and %+v", seed, step, l, m)
			}
		}
		if l.End != MaxOffset && l.End >= modelSize-1 {
			t.Fatalf("seed %d step %d: range past the model %+v", seed, step, l)
		}
		v := int8(1)
		if l.Exclusive {
			v = 2
		}
		s, e := span(l)
		cover.set(l.Owner, s, e, v)
	}
	for o, b := range ref {
		c := cover[o]
		if c == nil {
			c = new([modelSize]int8)
		}
		if *c != *b {
			t.Fatalf("seed %d step %d: owner %v holds %v, reference %v", seed, step, o, *c, *b)
		}
	}
}

func TestDeadlock(t *testing.T) {
	tb := New(Config{Granted: func(*Waiter) {}})
	c := Owner{Host: "c", SVID: 1}
	if st, _, _ := tb.Lock("x", lk(alice, true, 0, 0), false, nil, nil); st != Granted {
		t.Fatal(st)
	}
	if st, _, _ := tb.Lock("y", lk(bob, true, 0, 0), false, nil, nil); st != Granted {
		t.Fatal(st)
	}
	if st, _, _ := tb.Lock("z", lk(c, true, 0, 0), false, nil, nil); st != Granted {
		t.Fatal(st)
	}
	// alice waits for bob, bob for c: c asking for alice's lock closes
	// the cycle; another owner asking for it only waits.
	if st, _, _ := tb.Lock("y", lk(alice, true, 0, 0), true, nil, nil); st != Blocked {
		t.Fatal(st)
	}
	if st, _, _ := tb.Lock("z", lk(bob, true, 0, 0), true, nil, nil); st != Blocked {
		t.Fatal(st)
	}
	if st, _, _ := tb.Lock("x", lk(c, true, 0, 0), true, nil, nil); st != Deadlock {
		t.Fatalf("cycle: %v", st)
	}
	if st, _, _ := tb.Lock("x", lk(alic2, true, 0, 0), true, nil, nil); st != Blocked {
		t.Fatalf("no cycle: %v", st)
	}
	if len(tb.Waiters("x")) != 1 {
		t.Fatal("the refused request was queued")
	}
}

// BenchmarkLockUnlock: one owner locking and unlocking a range of a file
// that 64 other owners hold shared locks on elsewhere.
func BenchmarkLockUnlock(b *testing.B) {
	tb := New(Config{})
	for i := range 64 {
		tb.Lock("f", lk(Owner{Host: "h", SVID: int32(i)}, false, int64(i*100), int64(i*100+10)), false, nil, nil)
	}
	l := lk(alice, true, 1<<40, 1<<40+100)
	b.ReportAllocs()
	for b.Loop() {
		if st, _, _ := tb.Lock("f", l, false, nil, nil); st != Granted {
			b.Fatal(st)
		}
		tb.Unlock("f", alice, l.Start, l.End)
	}
}
