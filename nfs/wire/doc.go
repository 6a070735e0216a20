// Package wire holds the NFS version 3 wire types (RFC 1813) shared by the
// server (package nfs) and the client (package nfs/client): every
// procedure's arguments and results, with append-style encoders and
// decoders over xdr.Reader.
//
// Each argument type has Decode(*xdr.Reader) error (server) and
// Append(b) []byte (client); each result type has Append(b) []byte
// (server) and Decode(*xdr.Reader) error (client). READ results and WRITE
// arguments also have AppendHead, which stops after the data's XDR length
// word so that the data itself can travel as an RPC payload (direct
// placement over RDMA, a gather write over TCP).
//
// # Limits
//
// Decoders enforce the protocol's maximum lengths before slicing:
// nfs_fh3 is at most FHSize (64) bytes and never empty (knfsd answers
// GARBAGE_ARGS for both); file names decode up to NameDecodeMax bytes so
// that the server can answer NFS3ERR_NAMETOOLONG for names longer than
// MaxName (255), as knfsd does; nfspath3 is at most MaxPath (4096) bytes;
// WRITE data at most MaxData (1 MiB) and its length must equal the count
// argument. A decoding failure of arguments is GARBAGE_ARGS.
//
// # Buffer ownership
//
// Decoders never copy opaque data: file handles, WRITE data, READ data and
// verifiers are sub-slices of the buffer being decoded (on the server,
// call.Args, valid until the reply has been sent). Names and paths are Go
// strings (copies).
package wire
