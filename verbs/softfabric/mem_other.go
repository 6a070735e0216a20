//go:build !unix

package softfabric

// allocMem falls back to the Go heap where mmap is unavailable; only the
// software fabric runs on such systems, and a large []byte is not moved by
// the current garbage collector.
func allocMem(size int) ([]byte, error) { return make([]byte, size), nil }

func freeMem(b []byte) error { return nil }
