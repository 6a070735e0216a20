package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// TestReadIntoLentBuffer reads a file written with the pattern through
// client.ReadInto: with room for count+ReadOverhead the data lands in the
// lent buffer, with less it is allocated; both verify.
func TestReadIntoLentBuffer(t *testing.T) {
	dir, nfsPort, mountPort := startDaemon(t)
	const seed, size = 99, 300<<10 + 5
	data := make([]byte, size)
	Fill(seed, 0, data)
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := tinyConfig(nfsPort, mountPort)
	cfg.Export = dir
	cred := oncrpc.NewAuthSys("bench-test", 0, 0)
	root, err := mnt(ctx, &cfg, cred)
	if err != nil {
		t.Fatal(err)
	}
	caller, err := dialNFS(ctx, &cfg, cred)
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	nfs := client.New(caller)
	lr, err := nfs.Lookup(ctx, root, "f")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		off, count int
		bufCap     int
		alias      bool
	}{
		{0, 256 << 10, 256<<10 + client.ReadOverhead, true},
		{4097, 100003, 100003 + client.ReadOverhead, true},
		{size - 1000, 4096, 4096 + client.ReadOverhead, true}, // short read at EOF
		{8, 64 << 10, 64 << 10, false},                        // no room for the headers
		{8, 64 << 10, 0, false},
	} {
		buf := make([]byte, c.bufCap)
		res, err := nfs.ReadInto(ctx, lr.FH, uint64(c.off), uint32(c.count), buf)
		if err != nil {
			t.Fatalf("READ %d at %d: %v", c.count, c.off, err)
		}
		if want := min(c.count, size-c.off); len(res.Data) != want {
			t.Fatalf("READ %d at %d: %d bytes, want %d", c.count, c.off, len(res.Data), want)
		}
		if err := Verify(seed, uint64(c.off), res.Data); err != nil {
			t.Fatalf("READ %d at %d: %v", c.count, c.off, err)
		}
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
		p := uintptr(unsafe.Pointer(unsafe.SliceData(res.Data)))
		if aliased := cap(buf) > 0 && p >= lo && p < lo+uintptr(cap(buf)); aliased != c.alias {
			t.Errorf("READ %d at %d into %d bytes: aliased %v, want %v", c.count, c.off, c.bufCap, aliased, c.alias)
		}
	}
}
