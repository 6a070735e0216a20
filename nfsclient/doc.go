// Package nfsclient is a user-space NFS version 3 client (RFC 1813) for
// Go programs: it mounts an export of any NFSv3 server without the
// kernel, over TCP or over RPC-over-RDMA (RFC 8166, RFC 8267), and offers
// it through the interfaces Go code already uses.
//
//	fsys, err := nfsclient.Dial(ctx, "nfs://server/export?proto=rdma&fallback=tcp")
//	data, err := fsys.ReadFile("dir/file")          // io/fs
//	f, err := fsys.Create("out.bin")                 // *File: io.ReaderAt, io.WriterAt, io.Seeker
//	bfs := fsys.Billy()                               // go-billy billy.Filesystem
//
// # Connecting
//
// Dial takes an nfs:// URL (ParseURL lists its parameters), DialConfig a
// Config. The export is found with MOUNT v3 (over TCP, at mountport= or
// through rpcbind), NFS calls carry an AUTH_SYS credential (uid=, gid=,
// gids=, machine=), and nconnect= spreads them over several connections.
// With proto=rdma the calls go over RPC-over-RDMA through rdma-core
// (Config.RDMA.Provider replaces it, e.g. with the software fabric in
// tests); fallback=tcp uses TCP when no RDMA connection can be made.
// A call whose connection broke, or whose attempt got no reply within
// timeout= (default 60 s, the kernel client's timeo; timeout=0 for none),
// is sent again on a new connection with the same XID, with backoff, up to
// retries= times: the server's duplicate request cache answers a call it
// already ran. The timeout is what notices a server that vanished without
// a word (its disconnect lost on a dead link, a TCP peer gone silent),
// which leaves the connection looking alive. File handles stay valid
// across a server restart, as NFSv3 promises.
//
// # Files and data
//
// FS implements fs.FS, fs.ReadDirFS, fs.StatFS, fs.ReadFileFS and
// fs.ReadLinkFS; names follow fs.ValidPath and are relative to the
// export's root. OpenFile, Create, Mkdir, MkdirAll, Remove, RemoveAll,
// Rename, Symlink, Chmod, Chown, Chtimes and Statfs write. A File's
// ReadAt and WriteAt split large requests into READs and WRITEs of the
// block size (bs=, default the server's preferred size up to 1 MiB) with
// up to depth= of them in flight; WriteTo and ReadFrom (io.Copy) stream
// with the same pipelining, reads delivered in order. WriteToAt and
// ReadFromAt copy a whole file to an io.WriterAt or from an io.ReaderAt
// (a local *os.File): each of depth= workers moves its own blocks between
// the wire and the local side, in any order, with one buffer each.
//
// Writes are UNSTABLE and COMMITted on Sync, Close, and every
// MaxUncommitted bytes. Until its COMMIT, a File keeps a copy of the data
// it wrote; when the COMMIT's write verifier differs from the WRITEs'
// (the server restarted and may have lost them) the data is written
// again (Stats.Resends). ReadFromAt keeps no copy: it COMMITs before it
// returns and, for a re-send, reads the blocks from its source again.
//
// # Errors
//
// Failures are *fs.PathError. An NFS status is a *StatusError inside it,
// which errors.Is maps to fs.ErrNotExist, fs.ErrPermission and
// fs.ErrExist, and which wraps the *client.StatusError of nfs/client.
// The go-billy view uses the status's errno instead, for os.IsNotExist.
//
// # Ownership
//
//   - Data passed to Write, WriteAt or ReadFrom's reader is copied before
//     the call returns: the caller may reuse its buffer at once.
//     ReadFromAt reads its io.ReaderAt until it returns (a re-send reads
//     it again), never after. Over TCP it maps a regular *os.File source
//     read-only for the call and hands the mapping to writev(2), which
//     copies from the page cache into the socket; only the kernel reads
//     the mapping, so a file truncated meanwhile fails the copy with
//     EFAULT instead of faulting the process.
//   - ReadAt, Read and WriteTo fill or hand out memory the caller owns;
//     nothing of the package aliases it after the call returns.
//     WriteToAt into an *os.File writes the file only inside the blocks
//     it copies and only until it returns: over TCP the connection's
//     reader splices each READ's data from the socket into the file,
//     over RDMA it is pwritten from the registered region the server
//     placed it in, before that region is reused (oncrpc.ReplySink,
//     Stats.BytesReadDirect); elsewhere it is pwritten from a pooled
//     reply buffer.
//   - Over RDMA, READ data is placed by the server into a registered
//     region of the connection, reachable by the server only through a
//     memory window bound for that one call and invalidated before the
//     reply is decoded (see rpcrdma), and then copied into the caller's
//     buffer (or written into WriteToAt's file): Go heap memory is never
//     registered.
//   - Results (FileInfo, DirEntry, StatFS) are values the caller owns.
//
// A directory's path-to-handle mapping is cached for a few seconds, as
// the kernel client's dentry cache does; see dirCacheTTL.
package nfsclient
