package nfsclient

import "testing"

// TestWorkers: a copy starts no more workers than it has blocks (plus
// one to meet the end of a file of whole blocks), and never more than
// depth: a copy of many small files does not take depth buffers each.
func TestWorkers(t *testing.T) {
	const bs = 1 << 20
	for _, c := range []struct {
		depth int
		size  int64
		want  int
	}{
		{8, 0, 1}, {8, -5, 1}, {8, 4096, 1}, {8, bs - 1, 1}, {8, bs, 2}, {8, 3*bs + 1, 4},
		{8, 7 * bs, 8}, {8, 100 * bs, 8}, {1, 100 * bs, 1},
	} {
		if got := workers(c.depth, c.size, bs); got != c.want {
			t.Errorf("workers(%d, %d, %d) = %d, want %d", c.depth, c.size, bs, got, c.want)
		}
	}
}
