package drain

import (
	"context"
	"errors"
	"sync"
	"testing"
)

func TestWaitDone(t *testing.T) {
	var wg sync.WaitGroup
	cancelled, forced := false, false
	if err := Wait(context.Background(), &wg, func() { cancelled = true }, func() { forced = true }); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	if !cancelled || forced {
		t.Fatalf("cancelled %v forced %v, want true false", cancelled, forced)
	}
}

func TestWaitForced(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	release := make(chan struct{})
	go func() { <-release; wg.Done() }()
	ctx, cancelCtx := context.WithCancel(context.Background())
	cancelCtx()
	cancelled := false
	err := Wait(ctx, &wg, func() { cancelled = true }, func() {
		if !cancelled {
			t.Error("force called before cancel")
		}
		close(release)
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}
