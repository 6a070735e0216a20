package ratelog

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestOneLinePerIntervalCountsTheRest(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	l := New(50 * time.Millisecond)
	// The test's clock: 100 events within one interval are within it
	// however slowly the machine runs them.
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	for i := 0; i < 100; i++ {
		l.Warn(log, "refused")
		now = now.Add(time.Millisecond / 10)
	}
	if n := logs.Len(); n != 1 {
		t.Fatalf("%d lines for 100 events in one interval, want 1", n)
	}
	now = time.Unix(1000, 0).Add(49 * time.Millisecond)
	l.Warn(log, "refused")
	if n := logs.Len(); n != 1 {
		t.Fatalf("%d lines for an event 49 ms after the first line (interval 50 ms), want 1", n)
	}
	now = time.Unix(1000, 0).Add(50 * time.Millisecond)
	l.Warn(log, "refused")
	all := logs.All()
	if len(all) != 2 {
		t.Fatalf("%d lines after the interval, want 2", len(all))
	}
	if got := all[1].ContextMap()["suppressed"]; got != int64(100) {
		t.Fatalf("second line says suppressed=%v, want 100", got)
	}
}

// TestNewUsesTheWallClock: a Limiter made by New lets a line through
// again once the interval has really passed.
func TestNewUsesTheWallClock(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	l := New(time.Millisecond)
	l.Warn(log, "refused")
	time.Sleep(5 * time.Millisecond)
	l.Warn(log, "refused")
	if n := logs.Len(); n != 2 {
		t.Fatalf("%d lines for two events 5 ms apart (interval 1 ms), want 2", n)
	}
}
