// Package nfs is the NFS version 3 server program (RFC 1813, program
// 100003 version 3) for the oncrpc dispatcher, over any transport
// (TCP, or RPC-over-RDMA through package rpcrdma).
//
// NewServer takes a Config: an ExportResolver that finds an Export (fsid,
// path, vfs.FS backend, read-only flag) by the fsid inside a file handle,
// and an optional AuthorizeFunc hook through which the exports layer
// decides per call and per export which identity the call runs as and
// whether the export is read-only for it (default: every caller with its
// AUTH_SYS identity). Program returns the static procedure table for
// oncrpc.NewDispatcher; RootHandle gives MOUNT the handle of an export's
// root. Wire types live in package nfs/wire, the client in nfs/client and
// the transport-neutral end-to-end suite in nfs/nfstest.
//
// One file per procedure (getattr.go ... commit.go), the table in
// server.go, errno-to-nfsstat3 mapping in errors.go (the only place),
// permission checks in perm.go, handle format in handles.go.
//
// # Buffer ownership
//
//   - READ: the data is read by the backend directly into a buffer from
//     reply.AllocPayload(count), owned by the transport (registered memory
//     on RDMA, RDMA-Written into the client's Write chunk; over TCP written
//     with one writev after the head). The handler attaches it with
//     SetPayload after ending Head with the opaque's length word; it never
//     copies or keeps it.
//   - WRITE: the data is a sub-slice of call.Args (the transport's receive
//     buffer, or the buffer an RDMA Read chunk was pulled into), handed to
//     the backend's WriteAt without a copy. It is valid until the reply has
//     been sent; neither the server nor the backend may keep it.
//   - File handles in arguments are sub-slices of call.Args too; handles in
//     results are built in stack buffers and copied into reply.Head.
//   - Arguments are decoded into stack values; the READ, WRITE and GETATTR
//     paths allocate nothing in steady state.
//
// # File handles
//
// An nfs_fh3 (at most 64 bytes) is a header naming the export by its fsid
// (fsid= of the export, or FSIDFromPath), then the backend's vfs.Handle
// (7 to 48 bytes). The header is issued short when it can be:
//
//	0x80 | fsid                  fsid < 128, 1 byte
//	0x02, fsid (big-endian)      5 bytes
//
// and the 8-byte header of the first layout (0x01, kind 0, two zero
// bytes, the fsid) is still accepted, so handles issued before stay
// valid. Every handle byte is paid once per READDIRPLUS entry, which is
// why the header is short (handles.go).
//
// The server keeps no handle table: handles survive restarts and renames
// because backend handles do. The fsid selects the export, whose backend
// resolves (and confines to the export) the rest. A handle shorter than 8
// bytes, with a backend handle shorter than 7 or longer than 48, or of
// version 1 with an unknown kind or reserved bits set is
// NFS3ERR_BADHANDLE; an unknown first byte or an fsid with no export is
// NFS3ERR_STALE; what the backend cannot resolve is NFS3ERR_STALE
// (vfs.ErrStale) or NFS3ERR_BADHANDLE (vfs.ErrBadHandle). An empty handle
// or one over 64 bytes does not decode at all: GARBAGE_ARGS, as knfsd.
//
// # Write verifier
//
// WRITE and COMMIT return an 8-byte verifier, the server's start time in
// nanoseconds (Config.BootTime). It changes at every start, so a client
// holding UNSTABLE data that a restart may have lost sees the change at
// COMMIT and writes the data again.
//
// # Stability
//
// UNSTABLE writes are answered UNSTABLE. DATA_SYNC and FILE_SYNC writes
// are fsynced (data and all metadata) before the reply and answered
// FILE_SYNC, which RFC 1813 section 3.3.7 allows for DATA_SYNC: on this
// project's machine fdatasync costs what fsync costs (docs in write.go),
// so the stronger promise is free. COMMIT fsyncs the file. On an export
// with Export.Async (the async option) nothing waits for storage: WRITE
// answers the stability the client asked for and COMMIT answers OK
// without a sync, as knfsd does; data acknowledged so is lost if the
// server crashes before the kernel writes it back.
//
// # Duplicate request cache
//
// Non-idempotent procedures are replayed from the DRC on retransmission:
// SETATTR, CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK.
// All others (NULL, GETATTR, LOOKUP, ACCESS, READLINK, READ, WRITE,
// READDIR, READDIRPLUS, FSSTAT, FSINFO, PATHCONF, COMMIT) run again.
//
// # Directory cookies
//
// Cookies and the cookie verifier come from the backend (vfs.FS.ReadDir;
// the doc.go of each backend, vfs/localfs and vfs/billyfs, describes its
// scheme): an entry that is not removed is listed exactly once however the
// directory changes between calls. The verifier sent is the backend's,
// never zero. A cookie the backend cannot honour, or a nonzero cookie sent
// with a verifier other than the backend's, is NFS3ERR_BAD_COOKIE, on
// which the Linux client restarts its listing; a verifier of zero is
// accepted with any cookie, as knfsd accepts any verifier. A cookie past
// the end of a listing gives an empty list with eof.
//
// # Directory page sizes
//
// As knfsd: FSINFO dtpref is the maximum transfer size (1 MiB), which the
// Linux client's READDIR and READDIRPLUS counts grow to (capped by its
// rsize), and a page holds as many entries as fit the count (the whole
// resok, RFC 1813), the transport's reply limit (RDMA Reply chunk or
// inline size) and 1 MiB. The page is encoded into Reply.Head; the
// backend's entries are asked in batches of at most 4,096 resumed from
// the last cookie, and one batch at a time is held.
//
// # Permissions
//
// Every procedure runs as the caller's identity after the Authorize hook
// (squashing; invalid ids 0xffffffff become nobody, in DefaultAuthorize
// and in the daemon's hook): the backend takes the Cred and enforces the
// Unix rules for it (on the OS backend the kernel does, with the thread's
// fsuid, fsgid and groups set to the caller's; see vfs/doc.go,
// "Identity"). The checks that stay here are the ones where NFS differs
// from a local system call or where the backend uses a descriptor the
// server opened: READ (read or execute permission, owner override),
// WRITE, COMMIT and truncation (write permission, owner override), times
// set to server time (write permission, owner override: NFS3ERR_ACCES),
// READDIR (read permission), read-only exports (NFS3ERR_ROFS), and ACCESS,
// answered from the mode bits (checkAccess). READDIRPLUS has the backend
// check search permission once, as the caller (LOOKUP "."), and then
// looks its entries up as the server: a name lookup checks nothing more,
// and one identity switch per entry would cost more than the lookup. A failure the backend
// reports is mapped in errors.go: EACCES to NFS3ERR_ACCES, EPERM to
// NFS3ERR_PERM.
package nfs
