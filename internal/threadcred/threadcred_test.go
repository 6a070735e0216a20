package threadcred

import (
	"errors"
	"testing"
)

func TestFirstWins(t *testing.T) {
	state.Store(undecided)
	if !Taint() || !Taint() {
		t.Fatal("Taint refused while undecided")
	}
	if err := Reserve(); !errors.Is(err, ErrTainted) {
		t.Fatalf("Reserve after Taint: %v, want ErrTainted", err)
	}
	state.Store(undecided)
	if err := Reserve(); err != nil {
		t.Fatal(err)
	}
	if err := Reserve(); err != nil {
		t.Fatal(err)
	}
	if Taint() {
		t.Fatal("Taint allowed after Reserve")
	}
	state.Store(undecided)
}
