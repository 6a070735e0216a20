package nfs_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// BenchmarkCountingCost measures what the dispatcher's call counters add
// to GETATTR, READ and WRITE (docs/performance.md, "What the counters
// cost"). Two rigs over one backend, one counting as the daemon with
// --metrics-listen does and one not, run alternating blocks of the same
// call, the first of each pair alternating too, so that both see the
// same state of a shared, noisy machine. It reports the median over
// block pairs of the counting rig's time per call minus the other's
// (delta-ns/call) and of their ratio (on/off); ns/op is the two calls
// together.
func BenchmarkCountingCost(b *testing.B) {
	for _, tc := range []struct {
		name  string
		size  int
		block int
		args  func(fh []byte) (uint32, []byte)
	}{
		{"Getattr", 10, 200, func(fh []byte) (uint32, []byte) {
			return wire.ProcGetattr, (&wire.GetattrArgs{FH: fh}).Append(nil)
		}},
		{"Read1MiB", 1 << 20, 4, func(fh []byte) (uint32, []byte) {
			return wire.ProcRead, (&wire.ReadArgs{FH: fh, Count: 1 << 20}).Append(nil)
		}},
		{"Write1MiB", 1 << 20, 4, func(fh []byte) (uint32, []byte) {
			return wire.ProcWrite, (&wire.WriteArgs{FH: fh, Count: 1 << 20, Stable: wire.Unstable, Data: make([]byte, 1<<20)}).Append(nil)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			fs := benchFS(b)
			on, off := newRigCounting(b, fs, true), newRigCounting(b, fs, false)
			fh := on.mkfile(b, fs, tc.size)
			for _, r := range []*dispatchRig{on, off} {
				r.setCall(tc.args(fh))
				if st := r.status(b); st != wire.OK {
					b.Fatalf("%s: %v", tc.name, st)
				}
			}
			run := func(r *dispatchRig, n int) time.Duration {
				start := time.Now()
				for range n {
					r.do(b)
				}
				return time.Since(start)
			}
			var deltas, ratios []float64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += tc.block {
				var tOn, tOff time.Duration
				if len(deltas)%2 == 0 {
					tOn, tOff = run(on, tc.block), run(off, tc.block)
				} else {
					tOff, tOn = run(off, tc.block), run(on, tc.block)
				}
				deltas = append(deltas, float64(tOn-tOff)/float64(tc.block))
				ratios = append(ratios, float64(tOn)/float64(tOff))
			}
			b.StopTimer()
			b.ReportMetric(median(deltas), "delta-ns/call")
			b.ReportMetric(median(ratios), "on/off")
		})
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}
