package meter

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram bucket layout: bucket i counts durations d with
// 2^(i-1+minShift) ns < d <= 2^(i+minShift) ns (bucket 0: d <= 1.024 µs),
// and the last bucket counts everything above the largest bound. The
// bounds run from 1.024 µs to about 17.2 s, doubling.
const (
	minShift = 10
	// Buckets is the number of finite bucket bounds.
	Buckets = 25
)

// BucketBound returns the inclusive upper bound of bucket i (0 <= i < Buckets).
func BucketBound(i int) time.Duration { return time.Duration(1) << (minShift + i) }

// Histogram counts durations in fixed power-of-two buckets: an
// observation is one bit-length, one atomic add to its bucket and one to
// the sum. The zero value is ready to use.
type Histogram struct {
	counts [Buckets + 1]atomic.Uint64
	sumNS  atomic.Uint64
}

// Observe records d (negative durations count as zero).
func (h *Histogram) Observe(d time.Duration) {
	var ns uint64
	if d > 0 {
		ns = uint64(d) - 1 // so that d == 2^k ns lands in the bucket bounded by 2^k
	}
	i := bits.Len64(ns >> minShift)
	if i > Buckets {
		i = Buckets
	}
	h.counts[i].Add(1)
	h.sumNS.Add(uint64(max(d, 0)))
}

// HistogramSnapshot is a Histogram read at one time. Counts are per
// bucket, not cumulative; Counts[Buckets] is the overflow bucket.
type HistogramSnapshot struct {
	Counts [Buckets + 1]uint64
	Sum    time.Duration
}

// Count is the number of observations.
func (s *HistogramSnapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Snapshot reads the histogram. Concurrent Observes may be half seen
// (a bucket counted, its sum not yet), never lost.
func (h *Histogram) Snapshot() HistogramSnapshot {
	var s HistogramSnapshot
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	s.Sum = time.Duration(h.sumNS.Load())
	return s
}
