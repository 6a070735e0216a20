package xdr

import (
	"bytes"
	"errors"
	"testing"

	goxdr "github.com/rasky/go-xdr/xdr2"
)

func TestAppendByteExact(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want []byte
	}{
		{"uint32", AppendUint32(nil, 0x01020304), []byte{1, 2, 3, 4}},
		{"int32 -1", AppendInt32(nil, -1), []byte{0xff, 0xff, 0xff, 0xff}},
		{"uint64", AppendUint64(nil, 0x0102030405060708), []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{"true", AppendBool(nil, true), []byte{0, 0, 0, 1}},
		{"false", AppendBool(nil, false), []byte{0, 0, 0, 0}},
		{"opaque empty", AppendOpaque(nil, nil), []byte{0, 0, 0, 0}},
		{"opaque 1", AppendOpaque(nil, []byte{0xaa}), []byte{0, 0, 0, 1, 0xaa, 0, 0, 0}},
		{"opaque 4", AppendOpaque(nil, []byte{1, 2, 3, 4}), []byte{0, 0, 0, 4, 1, 2, 3, 4}},
		{"string 5", AppendString(nil, "hello"), []byte{0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o', 0, 0, 0}},
		{"fixed 3", AppendFixedOpaque(nil, []byte{1, 2, 3}), []byte{1, 2, 3, 0}},
	}
	for _, tt := range tests {
		if !bytes.Equal(tt.got, tt.want) {
			t.Errorf("%s: got % x, want % x", tt.name, tt.got, tt.want)
		}
	}
}

// TestDifferentialGoXDR checks the hand-written encoders against
// rasky/go-xdr for a structure that uses every primitive.
func TestDifferentialGoXDR(t *testing.T) {
	type sample struct {
		A uint32
		B int32
		C uint64
		D bool
		E []byte
		F string
		G [3]byte
	}
	for _, s := range []sample{
		{1, -2, 3, true, []byte{9}, "x", [3]byte{1, 2, 3}},
		{0, 0, 0, false, nil, "", [3]byte{}},
		{^uint32(0), -1 << 31, ^uint64(0), true, bytes.Repeat([]byte{7}, 13), "seven bytes", [3]byte{4, 5, 6}},
	} {
		var want bytes.Buffer
		if _, err := goxdr.Marshal(&want, &s); err != nil {
			t.Fatal(err)
		}
		var b []byte
		b = AppendUint32(b, s.A)
		b = AppendInt32(b, s.B)
		b = AppendUint64(b, s.C)
		b = AppendBool(b, s.D)
		b = AppendOpaque(b, s.E)
		b = AppendString(b, s.F)
		b = AppendFixedOpaque(b, s.G[:])
		if !bytes.Equal(b, want.Bytes()) {
			t.Fatalf("encode mismatch for %+v:\n got % x\nwant % x", s, b, want.Bytes())
		}
		r := NewReader(b)
		got := sample{A: r.Uint32(), B: r.Int32(), C: r.Uint64(), D: r.Bool()}
		got.E = r.Opaque(100)
		got.F = r.String(100)
		copy(got.G[:], r.FixedOpaque(3))
		if r.Err() != nil || r.Len() != 0 {
			t.Fatalf("decode: err %v, %d left", r.Err(), r.Len())
		}
		if got.A != s.A || got.B != s.B || got.C != s.C || got.D != s.D || !bytes.Equal(got.E, s.E) || got.F != s.F || got.G != s.G {
			t.Fatalf("decode mismatch: got %+v want %+v", got, s)
		}
	}
}

func TestReaderLimitsAndTruncation(t *testing.T) {
	valid := AppendString(AppendUint64(AppendUint32(nil, 7), 9), "abcdef")
	for n := 0; n < len(valid); n++ {
		r := NewReader(valid[:n])
		r.Uint32()
		r.Uint64()
		r.String(10)
		if r.Err() == nil {
			t.Errorf("prefix %d of %d decoded without error", n, len(valid))
		}
	}
	r := NewReader(valid)
	r.Uint32()
	r.Uint64()
	r.Opaque(5)
	var le *LengthError
	if !errors.As(r.Err(), &le) || le.Length != 6 || le.Max != 5 {
		t.Fatalf("want LengthError 6>5, got %v", r.Err())
	}
	// Sticky: later reads return zero values.
	if v := r.Uint32(); v != 0 {
		t.Fatalf("read after error returned %d", v)
	}
	// A huge count is rejected without allocation.
	r = NewReader(AppendUint32(nil, 1<<30))
	if n := r.Count(1<<31-1, 4); n != 0 || !errors.Is(r.Err(), ErrShort) {
		t.Fatalf("huge count: n=%d err=%v", n, r.Err())
	}
	r = NewReader(AppendUint32(nil, 2))
	if r.Bool(); r.Err() == nil {
		t.Fatal("bool 2 accepted")
	}
}

func TestOpaqueIsSubslice(t *testing.T) {
	b := AppendOpaque(nil, []byte("data"))
	r := NewReader(b)
	o := r.Opaque(10)
	o[0] = 'D'
	if b[4] != 'D' {
		t.Fatal("Opaque copied its result")
	}
	if cap(o) != 4 {
		t.Fatalf("Opaque result capacity %d leaks the rest of the buffer", cap(o))
	}
}

func FuzzReader(f *testing.F) {
	f.Add(AppendString(AppendUint64(AppendUint32(nil, 7), 9), "abcdef"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(b)
		r.Uint32()
		o := r.Opaque(64)
		if len(o) > 64 {
			t.Fatal("opaque over max")
		}
		n := r.Count(1000, 4)
		for i := 0; i < n; i++ {
			r.Uint32()
		}
		r.Bool()
		if r.Offset() > len(b) {
			t.Fatal("offset past end")
		}
	})
}

func BenchmarkAppendReadHeader(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = buf[:0]
		buf = AppendUint32(buf, uint32(i))
		buf = AppendUint32(buf, 1)
		buf = AppendUint64(buf, 4096)
		buf = AppendOpaque(buf, buf[:8])
		var r Reader
		r.Reset(buf)
		r.Uint32()
		r.Uint32()
		r.Uint64()
		r.Opaque(64)
	}
}
