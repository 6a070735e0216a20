// Package localfs is the backend that exports a directory of the host:
// it talks to the kernel directly, with file handles and *at system
// calls, and uses no go-billy. It implements vfs.FS and the optional
// vfs.FDReader (READ can splice file pages to a socket), vfs.Locker
// (NLM locks are mirrored as open file description locks, so processes
// on the server see them) and vfs.DirAttrChanger (CREATE, REMOVE and
// RMDIR take the directory's wcc_data from fstats of the descriptor
// they change it through, before and after; their permission check
// decides from the "before" fstat) and vfs.DirLookuper (LOOKUP's
// dir_attributes from the one fstat of the directory that also decides
// its permission check) and vfs.EntryLooker (READDIRPLUS's entries
// looked up in a directory resolved once per reply) and vfs.AttrSetter
// (SETATTR's object resolved and stat'ed once before the change and once
// after). The contract it keeps is vfs's (see the vfs
// package documentation); this page says how.
//
// # Backend
//
// New(root, Options) exports a directory of the host. It works on
// descriptors obtained from handles with *at system calls (openat with
// O_NOFOLLOW, mkdirat, symlinkat, mknodat, unlinkat, renameat, linkat
// with AT_EMPTY_PATH, fchownat, fchmodat2, utimensat, getdents64,
// pread/pwrite, fstatfs), so no client-supplied name can leave the export
// or follow a symbolic link: a name is one component ("/" and NUL
// rejected), "." and ".." mean something only to Lookup, and ".." of the
// root is the root. go-billy's osfs is not used: it resolves paths, which
// is what the handle design avoids. Mount points inside the export are
// not crossed (Lookup fails with EXDEV).
//
// # Handles
//
// Handles are the kernel's own file handles (name_to_handle_at, as
// knfsd and NFS-Ganesha's VFS use), authenticated with a keyed MAC
// (version 2; the layout version is in the MAC's input, not in the
// handle):
//
//	[0]      kernel handle type (every Linux filesystem's fits a byte)
//	[1:1+n]  kernel handle bytes (1 to 41)
//	[1+n:]   6 bytes: HMAC-SHA256(key, domain || 0x02 || bytes 0 to 1+n), truncated
//
// (7 bytes of overhead: 15 bytes on ext4, 19 on tmpfs; with the NFS
// header's one byte 16 and 20, as knfsd's handles with fsid=, so that a
// READDIRPLUS reply holds as many entries as knfsd's.) The first layout,
// version 1, is still accepted, so that handles issued before version 2
// stay valid (and issued for a kernel handle type above 255):
//
//	[0]      0x01
//	[1]      n, length of the kernel handle (at most 34)
//	[2:6]    kernel handle type, big-endian
//	[6:6+n]  kernel handle bytes
//	[6+n:]   8 bytes: HMAC-SHA256(key, domain || bytes 0 to 6+n), truncated
//
// A version-2 handle can have the shape of a version-1 one; decode tries
// that MAC first, then version 2's. A LOOKUP by name answers the
// version-2 handle also while a client's version-1 handle of the same
// file is cached (the entry is marked legacy), so clients converge on
// one handle a file. Six bytes of MAC are 2^48 guesses
// a handle, on top of the generation number that ext4, xfs and tmpfs
// draw at random for each inode (32 bits the kernel checks in
// open_by_handle_at); knfsd and NFS-Ganesha authenticate nothing beyond
// that generation.
//
// Handles survive server restarts and renames, and name one inode: once
// its last link is gone the handle is stale (open_by_handle_at fails, or
// the cached descriptor shows nlink 0). The key is Options.HandleKey, or
// 32 random bytes kept in the export root's extended attribute
// "trusted.gonfsrdma.fhkey" (readable only with CAP_SYS_ADMIN), created
// on first use; losing or changing it makes every handle stale. The MAC
// also covers a domain, Options.HandleDomain: the NFS server passes a
// label and the export's fsid (nfs.HandleDomain), so a handle of one
// export relabelled with another export's fsid fails authentication
// (ErrStale) even where all exports share one key, and a change of the
// handle format cannot make old handles mean something new. Handles a
// client made from a kernel handle of its own choosing fail too.
//
// Resolving a handle opens it with open_by_handle_at relative to the
// root's filesystem; then, as for every cache hit and every ".." Lookup,
// one check (within, in os_linux.go) decides that the object lies inside
// the export root: the kernel's current name of its descriptor
// (/proc/self/fd) must be the root's current name or lie below it. A
// directory moved out of the export on the server, or below an ancestor
// that moved out, is therefore stale from the next call on, through
// cached descriptors and after restarts alike (open_by_handle_at always
// reconnects a directory to its real place, also with a cold dentry
// cache), and ".." cannot lead out. The kernel has no name for a
// non-directory whose dentry is not in the dcache (after a reboot or
// memory pressure); such a file is accepted on the strength of the MAC,
// which proves this export issued the handle. So a file moved out of the
// export locally is stale while the dcache knows where it went, as with
// knfsd's no_subtree_check. A file with hard links both inside and
// outside the export may be named by the kernel through an outside link;
// its handle is then stale until the inside name is looked up again (the
// check prefers refusing to guessing). The check costs two readlink
// calls and no allocation; a cache hit skips it while a fanotify watch of
// the filesystem shows that nothing was renamed out of a directory of the
// export since the entry last passed (moves_linux.go), which costs one
// ioctl. Filesystems that cannot make handles
// (EOPNOTSUPP) are refused by New.
//
// # Open files
//
// The backend keeps a bounded LRU (Options.MaxOpenFiles, default
// 1024) of file objects keyed by handle: each holds an O_PATH descriptor
// (used for fstat, *at calls as a directory, fchownat and utimensat with
// AT_EMPTY_PATH) and, for regular files, an O_RDONLY and/or O_RDWR
// descriptor opened on first read or write; a directory whose ACLs the
// permission fast paths ask about gets an O_RDONLY descriptor on first
// ask (fgetxattr refuses O_PATH descriptors, and getxattr of
// /proc/self/fd/N costs a procfs path walk per call). An object opened
// by name that is cached already (a LOOKUP again) answers with its
// entry's handle when the kernel handles are equal, without a new entry
// or a MAC (fdCache.known); a LOOKUP that runs as the server asks
// name_to_handle_at by name first and, when that handle is a cached
// entry's on the export's mount, answers with an fstat of the entry's
// descriptor, opening and closing nothing (lookupCached), and otherwise
// opens the object by that handle (lookupByHandle). READ is pread on the cached
// descriptor plus one fstat (for EOF and to notice unlinks) and does not
// allocate; ReadFD (the FDReader interface) instead lends that
// descriptor to a callback for the length of the call, so NFS READ can
// splice the file's pages to a socket. WRITE is pwrite, followed by
// fdatasync when stable; COMMIT is fsync. The cache owns every descriptor: methods take a reference for
// the duration of a call, eviction closes descriptors once the last
// reference is dropped, and Close releases them all (OpenFiles reports
// the count, the root's descriptor included). Remove, Rmdir and Rename
// evict an object whose last link they removed. Objects unlinked by
// other processes (a local rm in the export, a job cleaning scratch
// space) are noticed by fstat (nlink 0): a call on the handle reports
// them stale, and a background sweep, every Options.SweepInterval
// (DefaultSweepInterval, 2 s), fstats the O_PATH descriptor of every
// cached entry no call is using and evicts those with no link left, so
// the server does not keep a deleted file's blocks allocated until a
// client happens to touch it (the files count as Evictions). An entry in
// use is never closed under its call: the sweep takes a reference of its
// own on each entry it examines, runs the fstat calls outside the cache
// lock, and evicts only entries whose only reference was its own; the
// next sweep handles one that was busy. While a sweep runs, an entry it
// holds that the LRU evicts meanwhile is closed when the sweep ends, so
// the descriptor bound can be exceeded for that long. A sweep of a full
// 1024-entry cache costs 0.3 to 0.4 ms of CPU on a 2-core VM
// (BenchmarkSweep1024) and allocates nothing once its buffer has grown to
// the cache's size; New starts the sweep, Close stops it and waits for
// it. (knfsd's file cache gets the same effect from fsnotify marks on the
// inodes it keeps open; a sweep needs no watch per file.)
// Read-only descriptors are cached so that executables served over NFS
// can still be executed locally (a cached O_RDWR descriptor would make
// exec fail with ETXTBSY); an O_RDWR one is opened only after a write.
//
// # Identity
//
// The identity-dependent system calls run on one of
// IdentityThreads dedicated threads whose fsuid, fsgid and supplementary
// groups are the Cred's (raw per-thread setfsuid, setfsgid and setgroups
// on goroutines locked to their threads for good; ident_linux.go says why
// no other goroutine or new thread can see them, and why restoring the
// ids on a shared thread is not enough). Handles are resolved as
// the server (open_by_handle_at needs CAP_DAC_READ_SEARCH, which a
// non-zero fsuid drops), then the operation runs as the caller. So these
// rules are the kernel's, applied atomically with the operation:
// search and write permission on directories (LOOKUP included), ACLs,
// sticky directories, protected hard links, and the owner and group of
// new objects (the directory's group when it is set-group-ID). New
// objects get the requested mode: where the
// process umask took bits away, fchmod restores them as the caller (the
// kernel's set-group-ID rules apply to that too). Symbolic links are
// always 0777.
//
// MKDIR, SYMLINK and MKNOD switch identity on the calling goroutine's own
// thread instead (asCallerHere): locked, the same per-thread calls, the
// object made and opened as the caller, then the server's ids restored
// and checked (with the thread's capability sets) before the thread is
// unlocked; a thread that cannot be restored is never unlocked, so the
// runtime ends it. A restored thread has equal ids but new credentials,
// which the RDMA command files refuse, so this is done only in a process
// that never opens an RDMA device: internal/threadcred settles it once,
// and verbs.NewRDMAProvider, when it finds a device, fails after such a
// switch (and prevents it when first; the daemon asks for it before it
// serves anything). With RDMA, these calls keep the identity threads.
//
// LOOKUP, and REMOVE and RMDIR in a directory that is not sticky, run as
// the server without the hop to an identity thread when the directory's
// mode bits alone grant the caller search (and write) permission, as the
// kernel's generic_permission would: the filesystem is tmpfs, ext2/3/4,
// XFS or Btrfs on a mount that is not idmapped, the server is root, and
// the caller owns the directory or it has no access ACL (modeperm_linux.go
// says how that is known and kept). Everything else, refusals included,
// still runs as the caller, so the answers and errors are the kernel's.
//
// CREATE likewise, where dirGrants grants write and search and nothing
// else could change the outcome (no set-id or sticky bit requested, no
// default ACL on the directory, no quota limit enforced, the initial user
// namespace): the server makes an unnamed O_TMPFILE inode with mode 0,
// gives it the caller's uid and the group the kernel would give the
// caller's file, sets the mode (and EXCLUSIVE's times), and only then
// links it under its name, so no name ever shows another owner or a wider
// mode (servercreate_linux.go lists the kernel rules this reproduces).
//
// SETATTR by the file's owner (chmod, explicit times or times set to
// now, a truncation, a chown keeping the uid), RENAME within one
// directory that is not sticky, and LINK of the caller's own file,
// likewise run as the server where the
// kernel's outcome for the caller is certain: no set-group-ID bit the
// caller could not set, no set-id bit the identity would decide the
// clearing of, a change of group only to one of the caller's groups with
// quota limits off, and for RENAME and LINK dirGrants' write and search
// grant on the (one) directory (servermeta_linux.go). A rename between two
// directories always runs as the caller. MKDIR, SYMLINK and MKNOD still
// run as the caller: without an O_TMPFILE for them, an object made as
// the server would show under its name with the server's owner until a
// chown, and a crash in between would leave it so.
//
// What runs as the server, because it uses descriptors the server opened
// or needs no permission: GetAttr, ReadLink, ReadAt, ReadFD, Commit,
// ReadDir, FSStat, and the writes of WriteAt to files without set-id
// bits. The NFS layer checks READ, WRITE, COMMIT, READDIR and truncation
// itself, with NFS's owner override (knfsd's NFSD_MAY_OWNER_OVERRIDE: the
// owner may write a file whose mode denies it, through the open that made
// it), and answers ACCESS from the mode bits; those are the only
// permission rules in code in this backend.
//
// # ReadDir cookies
//
// The scheme is chosen per export from the statfs type of the
// export root (mount points inside are never crossed), and DirCookies
// reports it:
//
//   - "offset" on ext2/3/4, xfs and btrfs: the cookie of an entry is its
//     d_off from getdents64, what knfsd hands out. Each ReadDir opens a
//     fresh directory stream, lseeks to the cookie and reads on. These
//     offsets belong to their entries (ext4: the htree hash of the name,
//     or the byte offset in an unindexed directory; xfs: the entry's
//     offset in the directory's data blocks; btrfs: its DIR_INDEX number)
//     and do not move when other entries come and go.
//   - "name" everywhere else, tmpfs included, or with Options.NameCookies:
//     on the Linux 6.1 tmpfs (libfs dcache_readdir before 6.6, and other
//     filesystems built on it) d_off is a position, "the N-th entry", and
//     lseek counts N live entries again: once entries before it are
//     removed, as `rm -rf` does while it lists, the same cookie lands
//     further on and the entries in between are never listed (rm then
//     fails with ENOTEMPTY). The filesystem type cannot tell a 6.1 tmpfs
//     from a 6.6 one with stable offsets, so tmpfs always gets name
//     cookies. A name's cookie is SipHash-2-4 of the name under a key
//     derived from the handle key, shifted into 3 .. 2^63-1 ("." is 1,
//     ".." 2), and a listing returns entries in cookie order, so resuming
//     at any cookie continues exactly where the order left off whatever
//     changed. The order comes from a snapshot of the directory (the
//     whole listing, sorted), kept in a cache bounded to 256 directories
//     and 64 MiB: a listing's first call (cookie 0) takes a new snapshot
//     unless the kept one is provably current (same ctime and mtime, and
//     they are at least two seconds older than the snapshot, so no change
//     can hide in the same timestamp tick); later calls use the kept
//     snapshot (or take one if it was evicted or the server restarted),
//     checking each entry with fstatat when the directory changed since
//     (or may have: when the snapshot began less than two seconds after
//     the directory's ctime, a change in the same tick would not show),
//     so removed entries are skipped, and retaking it when the directory
//     changed and the snapshot is more than five seconds old: `rm -rf` of
//     50,000 entries reads the directory once every five seconds, not
//     once per call. Entries created after the
//     snapshot appear in the next listing. Two names with the same 63-bit
//     hash in one directory (odds about n*n/2^64: 1e-10 for 50,000 names)
//     share a cookie, and a page ending between them skips the second.
//
// The cookies (and the name hash's key, derived from the handle key) stay
// valid across server restarts exactly as handles do. The verifier is
// zero, as knfsd's, for the scheme a filesystem gets by default: it could
// only change with the filesystem under the export root, which makes the
// handles stale first; the Linux client keeps its whole directory cache
// only while the verifier stays the zero it starts with (vfs package
// documentation). Name cookies forced on a filesystem of stable offsets
// (Options.NameCookies, for tests) get a nonzero verifier derived from the
// key, so the default scheme refuses their cookies after a restart
// without the option (cookies of the default scheme come with verifier
// 0, which every scheme accepts). Cookies above 2^63-1, or any
// the kernel refuses to seek to, are ErrBadCookie.
package localfs
