// Package xdr is the hot-path External Data Representation codec (RFC 4506)
// used by every wire format in gonfsrdma.
//
// Encoding is append-style: each Append* function appends the XDR form of a
// value to a caller-owned []byte and returns the extended slice, so a reply
// is built into one reusable buffer without intermediate allocations.
//
// Decoding goes through Reader, a cursor over a caller-owned []byte with a
// sticky error: after the first failure every further read returns the zero
// value and Err reports the first failure. Variable-length items are checked
// against a caller-supplied maximum before anything is sliced, so a hostile
// length word can never cause a large allocation.
//
// Buffer ownership: Reader never copies. Opaque and String-as-bytes results
// are sub-slices of the buffer given to NewReader (or Reset) and stay valid
// only as long as the caller keeps that buffer alive and unmodified; in the
// RPC layers that is until the call is released. Callers that keep decoded
// bytes longer must copy them. String results are copies (Go strings are
// immutable) and may be kept.
//
// Cold paths (MOUNT, rpcbind) may use github.com/rasky/go-xdr instead; the
// tests use it as a differential oracle for this package.
package xdr
