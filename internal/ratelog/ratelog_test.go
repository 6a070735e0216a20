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
	for i := 0; i < 100; i++ {
		l.Warn(log, "refused")
	}
	if n := logs.Len(); n != 1 {
		t.Fatalf("%d lines for 100 events in one interval, want 1", n)
	}
	time.Sleep(60 * time.Millisecond)
	l.Warn(log, "refused")
	all := logs.All()
	if len(all) != 2 {
		t.Fatalf("%d lines after the interval, want 2", len(all))
	}
	if got := all[1].ContextMap()["suppressed"]; got != int64(99) {
		t.Fatalf("second line says suppressed=%v, want 99", got)
	}
}
