//go:build unix

package softfabric

import "golang.org/x/sys/unix"

// allocMem returns size bytes of anonymous memory outside the Go heap.
func allocMem(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

func freeMem(b []byte) error { return unix.Munmap(b) }
