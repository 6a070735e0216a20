// Package adversary attacks the server the way issue 11's attacker did:
// with a raw ONC RPC client of its own, so the attacks do not share the
// assumptions of the project's NFS client (nfs/client, nfs/wire and the
// oncrpc client are not imported; the XDR items are encoded here by
// hand).
//
// The client (Conn) speaks ONC RPC version 2 (RFC 5531) over one TCP
// connection with record marking (section 11), sends AUTH_SYS
// credentials (appendix A) with any uid, gid, gid list and machine name,
// including ones the protocol forbids, and encodes the NFSv3 (RFC 1813
// section 3.3) and MOUNT v3 (section 5.2) calls the tests need. Send
// writes a call without waiting, for attackers that never read replies;
// NetConn gives the raw connection for half-sent records.
//
// The tests (TestIdentities, TestEscapes, TestRaces, TestExhaustion and
// TestLimits, the last with small limit settings) start the real
// daemon in-process on OS-backend exports in temporary directories, attack
// it over loopback and judge the result on disk with lstat(2) and file
// contents, never by the server's replies alone. They need root (the
// daemon must own files as other users) and fail rather than skip under
// CI=true. Every loop is bounded; the memory attack stops itself when the
// process's RSS passes its bound. ADVERSARY_LOG=1 logs the daemon to
// stderr.
//
// # Buffer ownership
//
//   - Call returns procedure results that alias the Conn's record buffer:
//     valid until the next call on the same Conn. The procedure wrappers
//     (Lookup, Read, Mnt, ...) copy handles and data out before returning.
//   - Arguments passed to Call and Send are only read, and not kept.
//   - ParseReply returns a sub-slice of the message it was given.
//   - A Conn is used by one goroutine at a time; racing tests give each
//     goroutine its own Conn.
package adversary
