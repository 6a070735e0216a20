package proto

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// w builds big-endian words, the way RFC 8166 section 4 lays them out.
func w(words ...uint32) []byte {
	var b []byte
	for _, v := range words {
		b = xdr.AppendUint32(b, v)
	}
	return b
}

type headerCase struct {
	name string
	hdr  Header
	want []byte
}

func headerCases() []headerCase {
	seg := func(h, l uint32, off uint64) Segment { return Segment{Handle: h, Length: l, Offset: off} }
	return []headerCase{
		{"MSG empty lists", Header{XID: 0x11223344, Credits: 64, Proc: ProcMsg},
			w(0x11223344, 1, 64, 0, 0, 0, 0)},
		{"MSG read list at P", Header{XID: 7, Credits: 32, Proc: ProcMsg, ReadList: []ReadSegment{
			{Position: 132, Segment: seg(0xabc, 65536, 0x1_0000_2000)},
			{Position: 132, Segment: seg(0xabd, 4096, 0x3000)},
		}}, w(7, 1, 32, 0,
			1, 132, 0xabc, 65536, 1, 0x2000,
			1, 132, 0xabd, 4096, 0, 0x3000,
			0, 0, 0)},
		{"MSG write list two chunks", Header{XID: 8, Credits: 1, Proc: ProcMsg, WriteList: []Chunk{
			{seg(1, 4096, 0x10), seg(2, 8192, 0x20)},
			{seg(3, 100, 0x30)},
		}}, w(8, 1, 1, 0,
			0,
			1, 2, 1, 4096, 0, 0x10, 2, 8192, 0, 0x20,
			1, 1, 3, 100, 0, 0x30,
			0,
			0)},
		{"MSG reply chunk", Header{XID: 9, Credits: 2, Proc: ProcMsg, HasReply: true, ReplyChunk: Chunk{seg(5, 32768, 0xdeadbeef00)}},
			w(9, 1, 2, 0, 0, 0, 1, 1, 5, 32768, 0xde, 0xadbeef00)},
		{"NOMSG reply chunk", Header{XID: 10, Credits: 64, Proc: ProcNoMsg, HasReply: true, ReplyChunk: Chunk{seg(6, 1000, 4), seg(7, 24, 8)}},
			w(10, 1, 64, 1, 0, 0, 1, 2, 6, 1000, 0, 4, 7, 24, 0, 8)},
		{"ERROR ERR_VERS", Header{XID: 11, Credits: 64, Proc: ProcError, Err: ErrVers, VersLow: 1, VersHigh: 1},
			w(11, 1, 64, 4, 1, 1, 1)},
		{"ERROR ERR_CHUNK", Header{XID: 12, Credits: 64, Proc: ProcError, Err: ErrChunk},
			w(12, 1, 64, 4, 2)},
	}
}

func TestHeaderByteExact(t *testing.T) {
	for _, tc := range headerCases() {
		got := tc.hdr.Append(nil)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: encode\n got % x\nwant % x", tc.name, got, tc.want)
			continue
		}
		var h Header
		r := xdr.NewReader(append(tc.want, 0xca, 0xfe, 0xba, 0xbe))
		if err := h.Decode(r, DefaultLimits); err != nil {
			t.Errorf("%s: decode: %v", tc.name, err)
			continue
		}
		if r.Offset() != len(tc.want) {
			t.Errorf("%s: decode consumed %d of %d bytes", tc.name, r.Offset(), len(tc.want))
		}
		if again := h.Append(nil); !bytes.Equal(again, tc.want) {
			t.Errorf("%s: round trip\n got % x\nwant % x", tc.name, again, tc.want)
		}
	}
	// The error helpers agree with the generic encoder.
	if got := AppendError(nil, 11, 64, ErrVers); !bytes.Equal(got, w(11, 1, 64, 4, 1, 1, 1)) {
		t.Errorf("AppendError ERR_VERS: % x", got)
	}
	if got := AppendError(nil, 12, 64, ErrChunk); !bytes.Equal(got, w(12, 1, 64, 4, 2)) {
		t.Errorf("AppendError ERR_CHUNK: % x", got)
	}
	if got := AppendFixed(nil, 1, 2, ProcMsg); len(got) != 16 {
		t.Errorf("AppendFixed: % x", got)
	}
}

func TestHeaderTruncatedPrefixes(t *testing.T) {
	for _, tc := range headerCases() {
		for n := 0; n < len(tc.want); n++ {
			var h Header
			err := h.Decode(xdr.NewReader(tc.want[:n]), DefaultLimits)
			var he *HeaderError
			if !errors.As(err, &he) {
				t.Fatalf("%s: prefix %d/%d: err %v, want *HeaderError", tc.name, n, len(tc.want), err)
			}
			if he.Code != ErrChunk {
				t.Errorf("%s: prefix %d: code %v", tc.name, n, he.Code)
			}
			if he.XIDValid != (n >= 4) {
				t.Errorf("%s: prefix %d: XIDValid %v", tc.name, n, he.XIDValid)
			}
		}
	}
}

func TestHeaderDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		code ErrCode
		is   error
	}{
		{"version 2", w(1, 2, 64, 0, 0, 0, 0), ErrVers, ErrBadVersion},
		{"version 0", w(1, 0, 64, 0, 0, 0, 0), ErrVers, ErrBadVersion},
		{"MSGP", w(1, 1, 64, 2, 0, 0, 0, 0, 0), ErrChunk, ErrMsgP},
		{"unknown proc", w(1, 1, 64, 9), ErrChunk, ErrUnknownProc},
		{"bad discriminator", w(1, 1, 64, 0, 2, 0, 0), ErrChunk, ErrBadDiscrim},
		{"huge segment count", w(1, 1, 64, 0, 0, 1, 0xffffffff), ErrChunk, ErrTooManySegs},
		{"segment count beyond input", w(1, 1, 64, 0, 0, 1, 3, 1, 2, 3, 4), ErrChunk, xdr.ErrShort},
		{"unknown errcode", w(1, 1, 64, 4, 3), ErrChunk, nil},
	}
	for _, tt := range tests {
		var h Header
		err := h.Decode(xdr.NewReader(tt.in), DefaultLimits)
		var he *HeaderError
		if !errors.As(err, &he) || he.Code != tt.code || !he.XIDValid || he.XID != 1 {
			t.Errorf("%s: got %v", tt.name, err)
			continue
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("%s: %v is not %v", tt.name, err, tt.is)
		}
	}
	// RDMA_DONE decodes; the server drops it.
	var h Header
	if err := h.Decode(xdr.NewReader(w(1, 1, 0, 3)), DefaultLimits); err != nil || h.Proc != ProcDone {
		t.Errorf("DONE: %v %v", h.Proc, err)
	}
}

func TestHeaderLimits(t *testing.T) {
	lim := Limits{MaxReadSegments: 2, MaxWriteChunks: 1, MaxChunkSegments: 2}
	s := Segment{Handle: 1, Length: 4, Offset: 0}
	over := []Header{
		{Proc: ProcMsg, ReadList: []ReadSegment{{4, s}, {4, s}, {4, s}}},
		{Proc: ProcMsg, WriteList: []Chunk{{s}, {s}}},
		{Proc: ProcMsg, WriteList: []Chunk{{s, s, s}}},
		{Proc: ProcMsg, ReplyChunk: Chunk{s, s, s}},
	}
	for i, hh := range over {
		var h Header
		err := h.Decode(xdr.NewReader(hh.Append(nil)), lim)
		var he *HeaderError
		if !errors.As(err, &he) || he.Code != ErrChunk {
			t.Errorf("case %d: got %v", i, err)
		}
	}
	at := Header{Proc: ProcMsg, ReadList: []ReadSegment{{4, s}, {4, s}}, WriteList: []Chunk{{s, s}}, ReplyChunk: Chunk{s, s}}
	var h Header
	if err := h.Decode(xdr.NewReader(at.Append(nil)), lim); err != nil {
		t.Fatalf("at the limits: %v", err)
	}
}

func TestHeaderDecodeReusesStorage(t *testing.T) {
	tc := headerCases()[2]
	var h Header
	r := xdr.NewReader(tc.want)
	h.Decode(r, DefaultLimits)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(tc.want)
		if err := h.Decode(r, DefaultLimits); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("steady-state decode allocates %v times", allocs)
	}
}

func TestPrivateData(t *testing.T) {
	p := PrivateData{RemoteInvalidate: true, SendSize: 4096, RecvSize: 4096}
	b := p.Append(nil)
	want := []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}
	if !bytes.Equal(b, want) {
		t.Fatalf("encode: % x want % x", b, want)
	}
	got, ok := ParsePrivateData(append(b, make([]byte, 48)...)) // CM zero padding
	if !ok || got != p {
		t.Fatalf("decode: %+v %v", got, ok)
	}
	big := PrivateData{SendSize: 65536, RecvSize: 1024}.Append(nil)
	if big[6] != 63 || big[7] != 0 || big[5] != 0 {
		t.Fatalf("sizes: % x", big)
	}
	for _, bad := range [][]byte{nil, make([]byte, 56), {0xf6, 0xab, 0x0e, 0x18, 2, 0, 3, 3}, want[:7]} {
		got, ok := ParsePrivateData(bad)
		if ok || got.SendSize != 1024 || got.RecvSize != 1024 || got.RemoteInvalidate {
			t.Errorf("% x: %+v %v", bad, got, ok)
		}
	}
}

func FuzzHeaderDecode(f *testing.F) {
	for _, tc := range headerCases() {
		f.Add(tc.want)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		r := xdr.NewReader(b)
		err := h.Decode(r, DefaultLimits)
		// The completion loop's peek agrees with the decoder.
		if rpc, plain := PlainMsg(b); plain {
			if err != nil && !errors.Is(err, ErrBadVersion) {
				t.Fatalf("PlainMsg accepts a header Decode rejects: %v", err)
			}
			if err == nil && (h.Proc != ProcMsg || len(h.ReadList) != 0 || len(h.WriteList) != 0 || h.HasReply || !bytes.Equal(rpc, r.Rest())) {
				t.Fatalf("PlainMsg disagrees with Decode: %+v", h)
			}
		}
		if err != nil {
			var he *HeaderError
			if !errors.As(err, &he) {
				t.Fatalf("error %v is not a *HeaderError", err)
			}
			return
		}
		if len(h.ReadList) > DefaultLimits.MaxReadSegments || len(h.WriteList) > DefaultLimits.MaxWriteChunks {
			t.Fatal("limits exceeded")
		}
		// A decoded header re-encodes to the bytes consumed.
		if h.Proc == ProcMsg || h.Proc == ProcNoMsg || h.Proc == ProcError {
			if got := h.Append(nil); !bytes.Equal(got, b[:r.Offset()]) {
				t.Fatalf("re-encode\n got % x\nwant % x", got, b[:r.Offset()])
			}
		}
	})
}

func FuzzChunkValidate(f *testing.F) {
	for _, tc := range headerCases() {
		f.Add(tc.want, uint16(200))
	}
	f.Add(w(1, 1, 64, 1, 1, 0, 5, 100, 0, 0, 0, 0, 0), uint16(0))
	f.Fuzz(func(t *testing.T, b []byte, inline uint16) {
		var h Header
		if h.Decode(xdr.NewReader(b), DefaultLimits) != nil {
			return
		}
		var cc CallChunks
		lim := ChunkLimits{MaxRecord: 1 << 20, MaxWriteChunkLen: 1 << 20, MaxReplyChunkLen: 1 << 20}
		if err := Validate(&h, int(inline), lim, &cc); err != nil {
			if !errors.Is(err, ErrBadChunk) {
				t.Fatalf("%v does not wrap ErrBadChunk", err)
			}
			return
		}
		if cc.ReadBytes+int(inline) > lim.MaxRecord {
			t.Fatal("record limit")
		}
		last := -1
		for _, c := range cc.Reads {
			if int(c.Position) <= last || c.Position&3 != 0 || int(c.Position) > int(inline) {
				t.Fatalf("bad position accepted: %+v", c)
			}
			last = int(c.Position)
		}
	})
}
