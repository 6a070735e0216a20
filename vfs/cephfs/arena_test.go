//go:build ceph && linux && cgo

package cephfs

import (
	"os"
	"testing"
)

// TestSingleMallocArena checks that the process runs with one malloc
// arena, for the Go runtime's threads and for threads started later (as
// libcephfs's are, at the first mount), and that an arena count chosen in
// the environment is left alone.
func TestSingleMallocArena(t *testing.T) {
	for _, c := range []struct {
		max, tunables string
		want          bool
	}{
		{"", "", true},
		{"", "glibc.malloc.mmap_threshold=1048576", true},
		{"4", "", false},
		{"", "glibc.malloc.mmap_threshold=1048576:glibc.malloc.arena_max=8", false},
	} {
		if got := singleMallocArenaWanted(c.max, c.tunables); got != c.want {
			t.Errorf("MALLOC_ARENA_MAX=%q GLIBC_TUNABLES=%q: one arena wanted %v, want %v", c.max, c.tunables, got, c.want)
		}
	}
	if !singleMallocArenaWanted(os.Getenv("MALLOC_ARENA_MAX"), os.Getenv("GLIBC_TUNABLES")) {
		if singleMallocArena() {
			t.Error("the environment chose an arena count, and it was overridden")
		}
		t.Skip("the environment chose the malloc arena count")
	}
	if !singleMallocArena() {
		t.Fatal("M_ARENA_MAX was not set to 1")
	}
	if got := mallocArenasWithThreads(8); got != 1 {
		t.Errorf("8 threads each holding an allocation use %d malloc arenas, want 1", got)
	}
}
