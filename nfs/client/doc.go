// Package client is an NFS version 3 client (RFC 1813) over any
// oncrpc.Caller: the TCP oncrpc.Client, or an RPC-over-RDMA caller.
//
// Each procedure has one method returning its typed result. A result with
// a status other than NFS3_OK comes back together with a *StatusError, so
// that callers can still read the wcc_data or post-op attributes of a
// failure. READ asks the transport for a Write chunk of count bytes
// (ClientCall.ReplyPayloadMax); WRITE data travels as ClientCall.Payload;
// READDIR, READDIRPLUS and READLINK may have large replies (LargeReply).
//
// Ownership: results are decoded from a reply buffer the transport hands
// over to the caller; byte slices in them (handles, READ data) point into
// that buffer and stay valid as long as the caller keeps them. Arguments
// (WRITE data included) are only read during the call.
package client
