package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCreditWaitHonoursContext: a call that waits for a credit gives up
// when its context ends instead of blocking until a credit frees.
func TestCreditWaitHonoursContext(t *testing.T) {
	c := newClientCredits(4)
	if err := c.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second acquire with a grant of 1: %v, want deadline exceeded", err)
	}
	// A release wakes a waiter; a grant increase lets more in.
	got := make(chan error, 1)
	go func() { got <- c.acquire(context.Background()) }()
	time.Sleep(10 * time.Millisecond)
	c.release()
	if err := <-got; err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	c.update(3)
	if err := c.acquire(context.Background()); err != nil {
		t.Fatalf("acquire after a larger grant: %v", err)
	}
	go func() { got <- c.acquire(context.Background()) }()
	go func() { got <- c.acquire(context.Background()) }()
	time.Sleep(10 * time.Millisecond)
	c.kill()
	for i := 0; i < 2; i++ {
		if err := <-got; err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("waiter after kill: %v", err)
		}
	}
}
