package cephfs

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

func testCodec() *handleCodec {
	return &handleCodec{key: bytes.Repeat([]byte{7}, 32), domain: []byte{1, 0, 0, 0, 9}, fscid: 3}
}

func TestHandleRoundTrip(t *testing.T) {
	hc := testCodec()
	for _, v := range []Vino{{1, NoSnap}, {0x10000000000, NoSnap}, {^uint64(0), 5}} {
		h := hc.encode(v)
		if len(h) != handleLen || len(h) > vfs.MaxHandle {
			t.Fatalf("handle of %d bytes", len(h))
		}
		got, err := hc.decode(h)
		if err != nil || got != v {
			t.Errorf("decode(encode(%v)) = %v, %v", v, got, err)
		}
	}
}

func TestHandleRejects(t *testing.T) {
	hc := testCodec()
	h := hc.encode(Vino{0x1000, NoSnap})
	other := *hc
	other.domain = []byte{1, 0, 0, 0, 10}
	otherFS := *hc
	otherFS.fscid = 4
	otherKey := *hc
	otherKey.key = bytes.Repeat([]byte{8}, 32)
	for name, tc := range map[string]struct {
		hc   *handleCodec
		h    vfs.Handle
		want error
	}{
		"short":         {hc, h[:len(h)-1], vfs.ErrBadHandle},
		"long":          {hc, append(append(vfs.Handle(nil), h...), 0), vfs.ErrBadHandle},
		"version":       {hc, append(vfs.Handle{0x01}, h[1:]...), vfs.ErrBadHandle},
		"empty":         {hc, nil, vfs.ErrBadHandle},
		"other domain":  {&other, h, vfs.ErrStale},
		"other fs":      {&otherFS, h, vfs.ErrStale},
		"other key":     {&otherKey, h, vfs.ErrStale},
		"flipped ino":   {hc, flip(h, 3), vfs.ErrStale},
		"flipped snap":  {hc, flip(h, 12), vfs.ErrStale},
		"flipped fscid": {hc, flip(h, 20), vfs.ErrStale},
		"flipped mac":   {hc, flip(h, handleLen-1), vfs.ErrStale},
	} {
		if _, err := tc.hc.decode(tc.h); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func flip(h vfs.Handle, i int) vfs.Handle {
	h = append(vfs.Handle(nil), h...)
	h[i] ^= 0x20
	return h
}

// FuzzHandleDecode: no input panics, and whatever decodes re-encodes to
// the same bytes (only handles this codec made are accepted).
func FuzzHandleDecode(f *testing.F) {
	hc := testCodec()
	f.Add([]byte(hc.encode(Vino{1, NoSnap})))
	f.Add([]byte{handleVersion})
	f.Add(make([]byte, handleLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := hc.decode(b)
		if err != nil {
			return
		}
		if !bytes.Equal(hc.encode(v), b) {
			t.Fatalf("accepted %x, which re-encodes to %x", b, hc.encode(v))
		}
	})
}

// BenchmarkHandleEncode is what making a handle costs (an HMAC-SHA256):
// what Create and Lookup save by returning their node's handle instead of
// encoding it a second time.
func BenchmarkHandleEncode(b *testing.B) {
	hc := testCodec()
	b.ReportAllocs()
	for i := range b.N {
		hc.encode(Vino{uint64(i), NoSnap})
	}
}
