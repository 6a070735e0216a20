// chunks.go: validation of a decoded transport header against a
// responder's limits (RFC 8166 sections 3.4 and 4.3), done before any chunk
// is used, and the grouping of Read segments into Read chunks.
//
// Buffer ownership: ReadChunk values index into the Header's ReadList; a
// CallChunks is owned by the per-call slot that validated it and is reused
// for the slot's next call.

package proto

import (
	"errors"
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// ReadChunk is one Read chunk: consecutive Read-list segments sharing one
// XDR position (RFC 8166 section 3.4.5).
type ReadChunk struct {
	Position uint32
	Segs     []ReadSegment
	Len      int // sum of segment lengths
}

// CallChunks is the validated chunk layout of one call.
type CallChunks struct {
	// Reads are the Read chunks in increasing position order.
	Reads []ReadChunk
	// ReadBytes is the total of all Read-chunk lengths.
	ReadBytes int
	// PositionZero says Reads[0] is a position-zero chunk carrying the
	// whole RPC call (RDMA_NOMSG).
	PositionZero bool
}

// ChunkLimits are the size limits applied by Validate.
type ChunkLimits struct {
	// MaxRecord bounds the assembled RPC call (inline part plus all Read
	// chunks plus their XDR pad).
	MaxRecord int
	// MaxWriteChunkLen bounds one Write chunk, MaxReplyChunkLen the Reply
	// chunk.
	MaxWriteChunkLen int
	MaxReplyChunkLen int
}

// ErrBadChunk is wrapped by every Validate error.
var ErrBadChunk = errors.New("rpcrdma: invalid chunk list")

func chunkErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadChunk, fmt.Sprintf(format, args...))
}

// Validate checks the chunk lists of a call header whose inline RPC
// message is inlineLen bytes (0 for RDMA_NOMSG), following the checks of
// knfsd's svc_rdma_recvfrom.c: every Read segment of one chunk shares its
// position and the segments of a chunk are consecutive; chunk positions
// are 4-byte aligned, strictly increasing and inside the inline message;
// a position-zero chunk appears only in RDMA_NOMSG, which must carry
// exactly one; RDMA_MSG never has one. Totals are checked against lim.
// It fills cc (reusing its storage) and returns an error wrapping
// ErrBadChunk on the first violation.
func Validate(h *Header, inlineLen int, lim ChunkLimits, cc *CallChunks) error {
	cc.Reads = cc.Reads[:0]
	cc.ReadBytes = 0
	cc.PositionZero = false
	if h.Proc != ProcMsg && h.Proc != ProcNoMsg {
		return chunkErr("%v is not a call", h.Proc)
	}
	rl := h.ReadList
	for i := 0; i < len(rl); {
		pos := rl[i].Position
		j := i
		n := 0
		for ; j < len(rl) && rl[j].Position == pos; j++ {
			if rl[j].Length == 0 {
				return chunkErr("zero-length read segment")
			}
			n += int(rl[j].Length)
			if n > lim.MaxRecord {
				return chunkErr("read chunk at %d longer than %d", pos, lim.MaxRecord)
			}
		}
		if pos&3 != 0 {
			return chunkErr("read chunk position %d not XDR aligned", pos)
		}
		if k := len(cc.Reads); k > 0 && pos <= cc.Reads[k-1].Position {
			// Either out of order or a chunk split by another one.
			return chunkErr("read chunk position %d out of order", pos)
		}
		if pos == 0 {
			if h.Proc != ProcNoMsg {
				return chunkErr("position-zero read chunk in RDMA_MSG")
			}
			cc.PositionZero = true
		} else if int(pos) > inlineLen {
			return chunkErr("read chunk position %d beyond the %d-byte inline message", pos, inlineLen)
		}
		cc.Reads = append(cc.Reads, ReadChunk{Position: pos, Segs: rl[i:j:j], Len: n})
		cc.ReadBytes += xdr.PaddedLen(n)
		i = j
	}
	if h.Proc == ProcNoMsg {
		if !cc.PositionZero {
			return chunkErr("RDMA_NOMSG call without a position-zero read chunk")
		}
		if len(cc.Reads) != 1 {
			// The Linux client never combines them; neither does knfsd
			// for NFSv3.
			return chunkErr("RDMA_NOMSG call with %d read chunks", len(cc.Reads))
		}
	}
	if cc.ReadBytes+inlineLen > lim.MaxRecord {
		return chunkErr("call of %d bytes exceeds %d", cc.ReadBytes+inlineLen, lim.MaxRecord)
	}
	for i, c := range h.WriteList {
		if len(c) == 0 {
			return chunkErr("write chunk %d has no segments", i)
		}
		if n := c.Len(); n > lim.MaxWriteChunkLen || n < 0 {
			return chunkErr("write chunk %d of %d bytes exceeds %d", i, n, lim.MaxWriteChunkLen)
		}
	}
	if h.HasReply {
		if n := h.ReplyChunk.Len(); n > lim.MaxReplyChunkLen || n < 0 {
			return chunkErr("reply chunk of %d bytes exceeds %d", n, lim.MaxReplyChunkLen)
		}
	}
	return nil
}

// SingleRKey returns the one steering tag every chunk of the call uses,
// for Send-With-Invalidate (as knfsd's svc_rdma_get_inv_rkey); ok is false
// when the call has no chunks or more than one distinct handle.
func SingleRKey(h *Header) (rkey uint32, ok bool) {
	seen := false
	check := func(hd uint32) bool {
		if !seen {
			rkey, seen = hd, true
			return true
		}
		return hd == rkey
	}
	for _, s := range h.ReadList {
		if !check(s.Handle) {
			return 0, false
		}
	}
	for _, c := range h.WriteList {
		for _, s := range c {
			if !check(s.Handle) {
				return 0, false
			}
		}
	}
	for _, s := range h.ReplyChunk {
		if !check(s.Handle) {
			return 0, false
		}
	}
	return rkey, seen
}
