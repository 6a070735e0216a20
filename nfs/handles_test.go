package nfs

import (
	"bytes"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// The header forms of nfs/handles.go, byte for byte: the short form for
// fsids below 128, the long form above, version 1 accepted.
func TestHandleHeaderForms(t *testing.T) {
	backend := vfs.Handle{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x11}
	var buf fhBuf
	for _, c := range []struct {
		fsid uint32
		want []byte
	}{
		{0, append([]byte{0x80}, backend...)},
		{1, append([]byte{0x81}, backend...)},
		{127, append([]byte{0xff}, backend...)},
		{128, append([]byte{0x02, 0, 0, 0, 0x80}, backend...)},
		{0xdeadbeef, append([]byte{0x02, 0xde, 0xad, 0xbe, 0xef}, backend...)},
	} {
		got := makeHandle(&buf, c.fsid, backend)
		if !bytes.Equal(got, c.want) {
			t.Errorf("fsid %d: %x, want %x", c.fsid, got, c.want)
		}
		fsid, h, st := parseHandle(got)
		if st != wire.OK || fsid != c.fsid || !bytes.Equal(h, backend) {
			t.Errorf("parse %x: fsid %d, %x, %v", got, fsid, h, st)
		}
	}
	fsid, h, st := parseHandle(append([]byte{1, 0, 0, 0, 0, 0, 0, 7}, backend...))
	if st != wire.OK || fsid != 7 || !bytes.Equal(h, backend) {
		t.Errorf("version 1: fsid %d, %x, %v", fsid, h, st)
	}
	// Too short for any backend's handle: garbled, whatever the header.
	for _, fh := range [][]byte{{0xff, 0, 0xff}, {0x81, 1, 2, 3, 4, 5, 6}, {2, 0, 0, 0, 1, 0xaa, 0xbb}} {
		if _, _, st := parseHandle(fh); st != wire.ErrBadHandle {
			t.Errorf("%x: %v, want NFS3ERR_BADHANDLE", fh, st)
		}
	}
	if makeHandle(&buf, 1, nil) != nil || makeHandle(&buf, 1, make(vfs.Handle, vfs.MaxHandle+1)) != nil {
		t.Error("an empty or oversized backend handle was encoded")
	}
	if fh := makeHandle(&buf, 1<<31, make(vfs.Handle, vfs.MaxHandle)); len(fh) > 64 {
		t.Errorf("the longest handle is %d bytes, beyond NFS3_FHSIZE", len(fh))
	}
}

// FuzzParseHandle: any bytes parse to an error or to a backend handle
// within vfs.MaxHandle that encodes back to a handle naming the same.
func FuzzParseHandle(f *testing.F) {
	var buf fhBuf
	f.Add(makeHandle(&buf, 1, vfs.Handle{1, 2, 3, 4, 5, 6, 7}))
	f.Add(makeHandle(&buf, 1<<20, vfs.Handle{1, 2, 3}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 7, 0xaa, 1, 2, 3, 4, 5, 6})
	f.Add([]byte{2, 0, 0, 0})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, fh []byte) {
		fsid, h, st := parseHandle(fh)
		if st != wire.OK {
			if st != wire.ErrBadHandle && st != wire.ErrStale {
				t.Fatalf("%x: status %v", fh, st)
			}
			return
		}
		if len(h) == 0 || len(h) > vfs.MaxHandle {
			t.Fatalf("%x: backend handle of %d bytes", fh, len(h))
		}
		var out fhBuf
		again := makeHandle(&out, fsid, h)
		fsid2, h2, st2 := parseHandle(again)
		if st2 != wire.OK || fsid2 != fsid || !bytes.Equal(h2, h) {
			t.Fatalf("%x: re-encoded as %x, which parses to %d %x %v", fh, again, fsid2, h2, st2)
		}
	})
}
