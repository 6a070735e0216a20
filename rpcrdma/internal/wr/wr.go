// Package wr holds what the server and client transports share about
// driving a queue pair, apart from the protocol: the work request ID
// layout and the completion loop. It owns no memory and no connection.
package wr

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// Kind says what a completed work request was; it is the high word of its
// ID, the low word being the index of the slot it belongs to.
type Kind int

// Work request kinds.
const (
	Recv     Kind = 1 // a Receive
	Read     Kind = 2 // the signaled last RDMA Read of a call's Read chain
	Send     Kind = 3 // the signaled Send that ends a message
	Other    Kind = 4 // unsignaled WRs; they complete only in error
	LocalInv Kind = 5 // a client's signaled local invalidate
	// The server's unsignaled RDMA Reads before a chain's last, and RDMA
	// Writes of a reply: like Other, but their error names what failed.
	ReadChain Kind = 6
	Write     Kind = 7
)

// ID is the work request ID of a kind for slot i.
func ID(k Kind, i int) uint64 { return uint64(k)<<32 | uint64(i) }

// Split returns the kind and slot index of a work request ID.
func Split(id uint64) (Kind, int) { return Kind(id >> 32), int(id & 0xffffffff) }

// Poll hands every completion of vc to complete, in order, until Poll
// fails, and returns that error. Both transports run their completion
// loop on it.
func Poll(vc verbs.Conn, complete func(*verbs.Completion)) error {
	wcs := make([]verbs.Completion, 32)
	for {
		n, err := vc.Poll(context.Background(), wcs)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			complete(&wcs[i])
		}
	}
}
