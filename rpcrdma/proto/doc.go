// Package proto is the RPC-over-RDMA version 1 protocol (RFC 8166, with
// the RFC 8797 connection private data) that the server transport
// (package rpcrdma) and the client transport (package rpcrdma/client)
// share: the transport header and its chunk lists (header.go), their
// validation before use (chunks.go), reply headers, fixed-offset peeks and
// the credit grant (reply.go). It knows nothing of queue pairs, memory
// registration or connections.
//
// Every wire type names its RFC struct and section. Sizes that both ends
// default to (credits, inline sizes, record and payload bounds) are here
// too, so that the two transports agree without importing each other.
//
// # Buffer ownership
//
//   - Encoders (Append*) append to a caller-owned []byte and keep no
//     reference to it.
//   - Header.Decode reads through an xdr.Reader over the caller's receive
//     buffer and copies every field it keeps into storage the Header owns
//     and reuses on the next Decode, so a Header kept by a per-call slot
//     decodes without allocating. The RPC message after an RDMA_MSG header
//     is left in the caller's buffer (the reader's Rest).
//   - Validate fills a caller-owned CallChunks whose Read chunks slice the
//     Header's ReadList: valid until that Header's next Decode.
//   - Peeks read the caller's buffer and keep nothing.
package proto

// Defaults both transports use.
const (
	// DefaultCredits is the credit grant and the calls in flight (as
	// knfsd's 64).
	DefaultCredits = 64
	// DefaultInlineSize is the inline send and receive size offered in
	// the private data (the Linux client's 4096).
	DefaultInlineSize = 4096
	// DefaultMaxRecord bounds an assembled call or reply (a 1 MiB WRITE
	// with its headers).
	DefaultMaxRecord = 1<<20 + 64<<10
	// DefaultMaxPayload bounds a READ payload and a Write chunk (1 MiB,
	// the rsize the server offers).
	DefaultMaxPayload = 1 << 20
)
