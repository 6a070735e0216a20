package rpcrdma

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// TestBigPoolFailedRegistrationBesideAnother is the panic seen between two
// hosts after a reconnect: two registrations in flight, the first fails,
// the second succeeds. The pool used to reserve a placeholder in all for
// each and, on the failure, move the last placeholder into the failed one's
// place, so the second's own index then lay past the end
// ("index out of range [22] with length 20" in get).
func TestBigPoolFailedRegistrationBesideAnother(t *testing.T) {
	errNoMem := errors.New("registration failed")
	type answer struct{ err error }
	calls := make(chan chan answer)
	reg := func(int, verbs.Access) (*verbs.MR, error) {
		c := make(chan answer)
		calls <- c
		a := <-c
		// A successful registration hands back a nil *MR: the pool only
		// stores and counts it (close skips nil entries).
		return nil, a.err
	}
	p := newBigPool(reg, 1<<20, 4, verbs.AccessLocalWrite)
	results := make(chan error, 2)
	get := func() {
		_, err := p.get()
		results <- err
	}
	go get()
	first := <-calls
	go get()
	second := <-calls
	first <- answer{err: errNoMem}
	if err := <-results; !errors.Is(err, errNoMem) {
		t.Fatalf("first get: %v, want the registration error", err)
	}
	second <- answer{}
	select {
	case err := <-results:
		if err != nil {
			t.Fatalf("second get: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second get did not return")
	}
	p.mu.Lock()
	all, pending := len(p.all), p.pending
	p.mu.Unlock()
	if all != 1 || pending != 0 {
		t.Fatalf("pool holds %d buffers with %d pending, want 1 and 0", all, pending)
	}
	p.close()
}

// TestBigPoolCloseDuringRegistration: a pool closed while a registration
// is in flight deregisters nothing twice, lists nothing afterwards and
// answers the registering caller errDead.
func TestBigPoolCloseDuringRegistration(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	reg := func(int, verbs.Access) (*verbs.MR, error) {
		once.Do(func() { close(started) })
		<-release
		return nil, nil
	}
	p := newBigPool(reg, 1<<20, 4, verbs.AccessLocalWrite)
	done := make(chan error, 1)
	go func() {
		_, err := p.get()
		done <- err
	}()
	<-started
	p.close()
	close(release)
	if err := <-done; !errors.Is(err, errDead) {
		t.Fatalf("get across close: %v, want errDead", err)
	}
	if len(p.all) != 0 || p.pending != 0 {
		t.Fatalf("closed pool lists %d buffers, %d pending", len(p.all), p.pending)
	}
}
