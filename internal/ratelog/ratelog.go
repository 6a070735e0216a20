package ratelog

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// Limiter lets one line through per interval.
type Limiter struct {
	interval time.Duration
	now      func() time.Time // time.Now; a test's clock in tests

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// New returns a limiter letting one line through per interval.
func New(interval time.Duration) *Limiter { return &Limiter{interval: interval, now: time.Now} }

// Allow reports whether a line may be written now and, if so, how many
// events were not logged since the previous line.
func (l *Limiter) Allow() (ok bool, suppressed int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.suppressed++
		return false, 0
	}
	l.last = now
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// Warn logs msg at warn level unless a line went out less than the
// interval ago; the line carries the count of events left out.
func (l *Limiter) Warn(log *zap.Logger, msg string, fields ...zap.Field) {
	if ok, n := l.Allow(); ok {
		log.Warn(msg, append(fields, zap.Int("suppressed", n))...)
	}
}

// Info is Warn at info level.
func (l *Limiter) Info(log *zap.Logger, msg string, fields ...zap.Field) {
	if ok, n := l.Allow(); ok {
		log.Info(msg, append(fields, zap.Int("suppressed", n))...)
	}
}
