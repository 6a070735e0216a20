package localfs

import (
	"os"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// The price of running a call as another identity: the hand-off to an
// identity thread and back, plus, when the identity differs from the
// thread's last one, setgroups, setfsgid and setfsuid with their checks.
// Paid by every metadata call as a caller other than the server, and by
// WRITE to set-id files.
func BenchmarkAsCaller(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: identities cannot be switched otherwise")
	}
	for _, bc := range []struct {
		name string
		next func(i int) vfs.Cred
	}{
		{"same", func(int) vfs.Cred { return vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{5, 6}} }},
		{"alternating", func(i int) vfs.Cred { return vfs.Cred{UID: 1000 + uint32(i&1), GID: 1000, GIDs: []uint32{5, 6}} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			creds := []vfs.Cred{bc.next(0), bc.next(1)}
			fn := func() error { return nil }
			b.ReportAllocs()
			for i := range b.N {
				if err := asCaller(&creds[i&1], fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestIdentityThreadsAreDedicated: no other goroutine ever runs on a
// thread that took a caller's identity. Restoring the ids is not enough:
// the kernel checks some writes (the RDMA command files': Soft-RoCE posts
// work requests through them) against the opener's credentials by
// pointer, and a thread that switched and switched back has new ones. The
// test records the threads calls ran on, then samples the threads of many
// other goroutines: none may be one of them.
func TestIdentityThreadsAreDedicated(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (CI runs as root)")
		}
		t.Skip("needs root")
	}
	switched := map[int]bool{}
	for i := range 200 {
		c := vfs.Cred{UID: 1000 + uint32(i%3), GID: 1000, GIDs: []uint32{5}}
		var tid int
		var fsuid uintptr
		if err := asCaller(&c, func() error {
			tid = unix.Gettid()
			// An invalid id changes nothing and returns the current one.
			fsuid, _, _ = unix.RawSyscall(sysSetfsuid, ^uintptr(0), 0, 0)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if uint32(fsuid) != c.UID {
			t.Fatalf("call %d ran with fsuid %d, want %d", i, uint32(fsuid), c.UID)
		}
		switched[tid] = true
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var bad []int
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				tid := unix.Gettid()
				if switched[tid] {
					mu.Lock()
					bad = append(bad, tid)
					mu.Unlock()
				}
				if cur, _, _ := unix.RawSyscall(sysSetfsuid, ^uintptr(0), 0, 0); uint32(cur) != 0 {
					mu.Lock()
					bad = append(bad, -int(uint32(cur)))
					mu.Unlock()
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("goroutines ran on identity threads (tids, or -fsuid): %v", bad[:min(len(bad), 10)])
	}
}
