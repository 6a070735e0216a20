// reply.go: the transport headers a responder sends (RFC 8166 section
// 3.5), the fixed-offset peeks at a received header that the completion
// loops use before a full decode, and the credit grant rule.
//
// Buffer ownership: encoders append to a caller-owned []byte and keep no
// reference to it; peeks read the caller's buffer and keep nothing.

package proto

import (
	"encoding/binary"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Offsets of the fixed words of rdma_msg (RFC 8166 section 4.2.4): xid,
// vers, credits, proc, then the first list discriminator.
const (
	offCredits = 8
	offProc    = 12
)

// PeekXID returns the XID of the transport header at the start of b, or
// false when b is too short to carry one.
func PeekXID(b []byte) (uint32, bool) {
	if len(b) < 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b), true
}

// PeekCredits returns the credit value (rdma_credit, RFC 8166 section
// 3.3.1) of the transport header at the start of b, or false when b is
// too short to carry one.
func PeekCredits(b []byte) (uint32, bool) {
	if len(b) < offCredits+4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[offCredits:]), true
}

// PlainMsg reports whether b is an RDMA_MSG with an empty Read list, an
// empty Write list and no Reply chunk (MinHeaderSize bytes of header), and
// returns the RPC message after it. Such a call needs no RDMA Read and its
// reply is one inline Send.
func PlainMsg(b []byte) (rpc []byte, ok bool) {
	if len(b) < MinHeaderSize || binary.BigEndian.Uint32(b[offProc:]) != uint32(ProcMsg) {
		return nil, false
	}
	for off := fixedHeaderSize; off < MinHeaderSize; off += 4 {
		if binary.BigEndian.Uint32(b[off:]) != 0 {
			return nil, false
		}
	}
	return b[MinHeaderSize:], true
}

// ReplyMsgLen is the size of the RDMA_MSG reply header that AppendReplyMsg
// writes for a call whose Write list is wl.
func ReplyMsgLen(wl []Chunk) int {
	n := fixedHeaderSize + 4 + 4 + 4 // empty Read list, Write list end, no Reply chunk
	for _, c := range wl {
		n += 8 + segmentSize*len(c)
	}
	return n
}

// AppendReplyMsg appends the header of an RDMA_MSG reply (RFC 8166
// section 3.5.2): an empty Read list, the call's Write list wl echoed with
// each segment's length cut to what was written (used, for the first
// chunk; zero for every other segment and chunk, as section 3.5.3 asks
// for chunks left unused), no Reply chunk. The RPC reply follows.
func AppendReplyMsg(b []byte, xid, credits uint32, wl []Chunk, used []uint32) []byte {
	b = AppendFixed(b, xid, credits, ProcMsg)
	b = xdr.AppendUint32(b, 0) // Read list
	for i, c := range wl {
		b = xdr.AppendUint32(b, 1)
		b = xdr.AppendUint32(b, uint32(len(c)))
		for j, seg := range c {
			seg.Length = 0
			if i == 0 && j < len(used) {
				seg.Length = used[j]
			}
			b = AppendSegment(b, seg)
		}
	}
	b = xdr.AppendUint32(b, 0) // Write list end
	return xdr.AppendUint32(b, 0)
}

// AppendReplyNoMsg appends the header of an RDMA_NOMSG reply whose RPC
// reply went into the call's Reply chunk rc (RFC 8166 section 3.5.4):
// empty Read and Write lists and rc with each segment's length cut to
// used[i].
func AppendReplyNoMsg(b []byte, xid, credits uint32, rc Chunk, used []uint32) []byte {
	b = AppendFixed(b, xid, credits, ProcNoMsg)
	b = xdr.AppendUint32(b, 0) // Read list
	b = xdr.AppendUint32(b, 0) // Write list
	b = xdr.AppendUint32(b, 1)
	b = xdr.AppendUint32(b, uint32(len(rc)))
	for j, seg := range rc {
		seg.Length = used[j]
		b = AppendSegment(b, seg)
	}
	return b
}

// Grant is the credit value a responder puts in a reply (RFC 8166 section
// 3.3.1): the Receives it keeps posted for the requester, at most limit
// (the credits it offers), and never less than 1, since a grant of 0
// leaves a requester that follows the RFC unable to send at all.
func Grant(posted, limit int) uint32 {
	return uint32(max(min(posted, limit), 1))
}
