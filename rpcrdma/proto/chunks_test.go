package proto

import (
	"errors"
	"testing"
)

func TestValidate(t *testing.T) {
	lim := ChunkLimits{MaxRecord: 1<<20 + 64<<10, MaxWriteChunkLen: 1 << 20, MaxReplyChunkLen: 1 << 20}
	s := func(l uint32) Segment { return Segment{Handle: 1, Length: l, Offset: 0} }
	rs := func(pos, l uint32) ReadSegment { return ReadSegment{Position: pos, Segment: s(l)} }
	tests := []struct {
		name   string
		h      Header
		inline int
		ok     bool
		reads  int
		total  int
	}{
		{"no chunks", Header{Proc: ProcMsg}, 100, true, 0, 0},
		{"one chunk two segments", Header{Proc: ProcMsg, ReadList: []ReadSegment{rs(96, 4096), rs(96, 5)}}, 100, true, 1, 4104},
		{"two chunks", Header{Proc: ProcMsg, ReadList: []ReadSegment{rs(8, 4), rs(96, 4)}}, 100, true, 2, 8},
		{"position at end of inline", Header{Proc: ProcMsg, ReadList: []ReadSegment{rs(100, 4)}}, 100, true, 1, 4},
		{"position beyond inline", Header{Proc: ProcMsg, ReadList: []ReadSegment{rs(104, 4)}}, 100, false, 0, 0},
		{"unaligned position", Header{Proc: ProcMsg, ReadList: []ReadSegment{rs(98, 4)}}, 100, false, 0, 0},
		{"split chunk", Header{Proc: ProcMsg, ReadList: []ReadSegment{rs(8, 4), rs(16, 4), rs(8, 4)}}, 100, false, 0, 0},
		{"decreasing positions", Header{Proc: ProcMsg, ReadList: []ReadSegment{rs(16, 4), rs(8, 4)}}, 100, false, 0, 0},
		{"zero-length segment", Header{Proc: ProcMsg, ReadList: []ReadSegment{rs(8, 0)}}, 100, false, 0, 0},
		{"position zero in MSG", Header{Proc: ProcMsg, ReadList: []ReadSegment{rs(0, 4)}}, 100, false, 0, 0},
		{"NOMSG position zero", Header{Proc: ProcNoMsg, ReadList: []ReadSegment{rs(0, 4000), rs(0, 1)}}, 0, true, 1, 4004},
		{"NOMSG without read chunk", Header{Proc: ProcNoMsg}, 0, false, 0, 0},
		{"NOMSG with non-zero chunk", Header{Proc: ProcNoMsg, ReadList: []ReadSegment{rs(8, 4)}}, 0, false, 0, 0},
		{"NOMSG two chunks", Header{Proc: ProcNoMsg, ReadList: []ReadSegment{rs(0, 4), rs(8, 4)}}, 0, false, 0, 0},
		{"read bytes over record", Header{Proc: ProcMsg, ReadList: []ReadSegment{rs(8, 1<<20), rs(8, 64<<10)}}, 100, false, 0, 0},
		{"write chunk over limit", Header{Proc: ProcMsg, WriteList: []Chunk{{s(1 << 20), s(1)}}}, 100, false, 0, 0},
		{"empty write chunk", Header{Proc: ProcMsg, WriteList: []Chunk{{}}}, 100, false, 0, 0},
		{"reply chunk over limit", Header{Proc: ProcMsg, HasReply: true, ReplyChunk: Chunk{s(1<<20 + 1)}}, 100, false, 0, 0},
		{"error is not a call", Header{Proc: ProcError}, 0, false, 0, 0},
	}
	var cc CallChunks
	for _, tt := range tests {
		err := Validate(&tt.h, tt.inline, lim, &cc)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v", tt.name, err)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrBadChunk) {
				t.Errorf("%s: %v does not wrap ErrBadChunk", tt.name, err)
			}
			continue
		}
		if len(cc.Reads) != tt.reads || cc.ReadBytes != tt.total {
			t.Errorf("%s: %d chunks %d bytes, want %d %d", tt.name, len(cc.Reads), cc.ReadBytes, tt.reads, tt.total)
		}
	}
}

func TestSingleRKey(t *testing.T) {
	h := Header{ReadList: []ReadSegment{{8, Segment{Handle: 5}}}, WriteList: []Chunk{{{Handle: 5}}}}
	if k, ok := SingleRKey(&h); !ok || k != 5 {
		t.Fatal(k, ok)
	}
	h.ReplyChunk = Chunk{{Handle: 6}}
	if _, ok := SingleRKey(&h); ok {
		t.Fatal("two handles")
	}
	if _, ok := SingleRKey(&Header{}); ok {
		t.Fatal("no chunks")
	}
}
