package proto

import (
	"bytes"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// TestReplyHeaders: the reply encoders write what Header.Append writes for
// the same header, and the peeks read the fixed words back.
func TestReplyHeaders(t *testing.T) {
	wl := []Chunk{{{Handle: 1, Length: 4096, Offset: 0x1000}, {Handle: 1, Length: 4096, Offset: 0x2000}}, {{Handle: 2, Length: 100, Offset: 9}}}
	got := AppendReplyMsg(nil, 7, 64, wl, []uint32{4096, 10})
	want := (&Header{XID: 7, Credits: 64, Proc: ProcMsg, WriteList: []Chunk{
		{{Handle: 1, Length: 4096, Offset: 0x1000}, {Handle: 1, Length: 10, Offset: 0x2000}},
		{{Handle: 2, Length: 0, Offset: 9}},
	}}).Append(nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("RDMA_MSG echo\n got % x\nwant % x", got, want)
	}
	if len(got) != ReplyMsgLen(wl) {
		t.Fatalf("ReplyMsgLen = %d, encoded %d", ReplyMsgLen(wl), len(got))
	}
	if plain := AppendReplyMsg(nil, 7, 64, nil, nil); len(plain) != MinHeaderSize || ReplyMsgLen(nil) != MinHeaderSize {
		t.Fatalf("empty RDMA_MSG reply is %d bytes, want %d", len(plain), MinHeaderSize)
	}

	rc := Chunk{{Handle: 3, Length: 8192, Offset: 0x10}, {Handle: 3, Length: 8192, Offset: 0x3000}}
	got = AppendReplyNoMsg(nil, 8, 2, rc, []uint32{8192, 12})
	want = (&Header{XID: 8, Credits: 2, Proc: ProcNoMsg, HasReply: true,
		ReplyChunk: Chunk{{Handle: 3, Length: 8192, Offset: 0x10}, {Handle: 3, Length: 12, Offset: 0x3000}}}).Append(nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("RDMA_NOMSG\n got % x\nwant % x", got, want)
	}

	if x, ok := PeekXID(got); !ok || x != 8 {
		t.Fatalf("PeekXID = %d %v", x, ok)
	}
	if c, ok := PeekCredits(got); !ok || c != 2 {
		t.Fatalf("PeekCredits = %d %v", c, ok)
	}
	for n := 0; n < 12; n++ {
		if _, ok := PeekCredits(got[:n]); ok {
			t.Fatalf("PeekCredits accepted %d bytes", n)
		}
		if _, ok := PeekXID(got[:n]); ok != (n >= 4) {
			t.Fatalf("PeekXID on %d bytes: %v", n, ok)
		}
	}
}

// TestPlainMsg: only RDMA_MSG with three empty lists is plain, and the RPC
// message is what follows the seven words; every prefix is refused.
func TestPlainMsg(t *testing.T) {
	rpcMsg := []byte{0xde, 0xad, 0xbe, 0xef}
	b := append(AppendReplyMsg(nil, 1, 1, nil, nil), rpcMsg...)
	if rpc, ok := PlainMsg(b); !ok || !bytes.Equal(rpc, rpcMsg) {
		t.Fatalf("PlainMsg = % x %v", rpc, ok)
	}
	for n := 0; n < MinHeaderSize; n++ {
		if _, ok := PlainMsg(b[:n]); ok {
			t.Fatalf("PlainMsg accepted a %d-byte prefix", n)
		}
	}
	for _, h := range []Header{
		{XID: 1, Proc: ProcNoMsg},
		{XID: 1, Proc: ProcMsg, ReadList: []ReadSegment{{Position: 4, Segment: Segment{Handle: 1, Length: 4}}}},
		{XID: 1, Proc: ProcMsg, WriteList: []Chunk{{{Handle: 1, Length: 4}}}},
		{XID: 1, Proc: ProcMsg, HasReply: true, ReplyChunk: Chunk{}},
	} {
		if _, ok := PlainMsg(append(h.Append(nil), rpcMsg...)); ok {
			t.Fatalf("PlainMsg accepted %+v", h)
		}
	}
	if _, ok := PlainMsg(xdr.AppendUint32(AppendFixed(nil, 1, 1, ProcError), uint32(ErrChunk))); ok {
		t.Fatal("PlainMsg accepted RDMA_ERROR")
	}
}

// TestGrant: never 0, never above the offer, else what is posted.
func TestGrant(t *testing.T) {
	for _, c := range []struct {
		posted, limit int
		want          uint32
	}{{64, 64, 64}, {63, 64, 63}, {0, 64, 1}, {-3, 64, 1}, {100, 64, 64}, {1, 1, 1}} {
		if got := Grant(c.posted, c.limit); got != c.want {
			t.Errorf("Grant(%d, %d) = %d, want %d", c.posted, c.limit, got, c.want)
		}
	}
}
