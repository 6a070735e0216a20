package locks

import "testing"

func TestCounts(t *testing.T) {
	tb := New(Config{Granted: func(*Waiter) {}})
	mustLock(t, tb, lk(alice, true, 0, 9), Granted)
	mustLock(t, tb, lk(alice, false, 20, 29), Granted)
	if st, _, err := tb.Lock("f", lk(bob, true, 0, 0), true, "w", nil); err != nil || st != Blocked {
		t.Fatalf("blocked request: %v %v", st, err)
	}
	if st, _, err := tb.Lock("g", lk(bob, true, 0, 0), false, nil, nil); err != nil || st != Granted {
		t.Fatalf("lock on g: %v %v", st, err)
	}
	if got, want := tb.Counts(), (Counts{Held: 3, Blocked: 1}); got != want {
		t.Fatalf("Counts() = %+v, want %+v", got, want)
	}
	tb.Unlock("f", alice, 0, MaxOffset) // grants bob's waiter
	if got, want := tb.Counts(), (Counts{Held: 2}); got != want {
		t.Fatalf("after unlock: %+v, want %+v", got, want)
	}
}
