// rw.go: RDMA Read and Write contexts: the pool of large registered
// buffers that Read chunks are pulled into and bulk replies are pushed
// from, and the construction of Read/Write work-request chains over chunk
// segments.
//
// Buffer ownership: a bigBuf belongs to the pool while free. A per-call
// slot borrows it (call assembly, READ payload, Reply-chunk staging) and
// gives it back when the slot is released, which happens only after the
// Send that ends the reply has completed (so no posted WR names it). Every
// registered buffer is also listed in pool.all; the connection deregisters
// them all after its queue pair is closed, whether or not a slot still
// holds them.

package rpcrdma

import (
	"errors"
	"unsafe"

	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

var errDead = errors.New("rpcrdma: connection is gone")

// offsetIn reports where b starts inside m, if b lies wholly inside m.
func offsetIn(m *verbs.MR, b []byte) (int, bool) {
	if m == nil || len(b) == 0 {
		return 0, false
	}
	base := m.Bytes()
	if len(base) == 0 {
		return 0, false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(base)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < start || p-start > uintptr(len(base)) || uintptr(len(b)) > uintptr(len(base))-(p-start) {
		return 0, false
	}
	return int(p - start), true
}

// appendWrites appends RDMA Write WRs that place n bytes of m starting at
// off into the segments of c, in order, never past a segment's length,
// each Write at most piece bytes (writePieces). It returns the WRs, the
// SGE storage, and the per-segment lengths written (appended to used).
// The caller has checked n <= c.Len() and gave sges enough capacity that
// it never grows (each WR's SGL points into it): at most len(c) +
// writePieces(n, piece) entries.
func appendWrites(wrs []verbs.SendWR, sges []verbs.SGE, used []uint32, m *verbs.MR, off, n, piece int, c proto.Chunk, wrid uint64) ([]verbs.SendWR, []verbs.SGE, []uint32) {
	for _, seg := range c {
		k := int(seg.Length)
		if k > n {
			k = n
		}
		used = append(used, uint32(k))
		for done := 0; done < k; {
			p := min(k-done, piece)
			sges = append(sges, m.SGE(off, p))
			wrs = append(wrs, verbs.SendWR{
				ID: wrid, Opcode: verbs.OpRDMAWrite, SGL: sges[len(sges)-1:],
				RemoteAddr: seg.Offset + uint64(done), RKey: seg.Handle,
			})
			off += p
			done += p
		}
		n -= k
	}
	return wrs, sges, used
}

// writePieces bounds how many RDMA Writes of at most piece bytes push
// total bytes, besides the one extra Write each segment boundary can cost.
// A segment longer than Config.WritePiece goes as several Writes, each its
// own message on the wire. Soft-RoCE asks for an ACK at the end of each
// message and otherwise every 65 frames (rxe_req.c), and it recovers a
// lost frame by the responder's NAK only while no retry is under way: a
// second NAK that comes before any ACK or completed Write after a retry
// began is dropped (rxe_comp.c, started_retry), and the connection then
// waits out the 2.1 s ACK timeout. The shorter each Write, the sooner an
// ACK ends the retry, and the fewer losses cost that timeout. Between the
// two test guests at 1 % frame loss, with one 1 MiB Write per READ, the
// kernel client's 64 MiB write and read did not finish in 300 s. With
// 16 KiB Writes, a 16 MiB read took 47.8 s, against knfsd's 50.8 s
// (issue 16).
func writePieces(total, piece int) int { return (total + piece - 1) / piece }

//END
