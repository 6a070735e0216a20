//go:build race

package oncrpc

// raceDetector says the tests run under the race detector, which
// multiplies memory use and slows every access: memory and latency bounds
// are reported but asserted only in the run without it (make test).
const raceDetector = true
