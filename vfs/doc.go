// Package vfs is the backing-store layer under the NFS server: one FS per
// export, addressed by stable handles, implemented over go-billy
// filesystems with small optional interfaces for what billy lacks (hard
// links, mknod, statfs, node identity, ownership).
//
// # Backends
//
// NewOS(root, OSOptions) exports a directory of the host. It works on
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
// NewMem(MemOptions) is an in-memory FS over go-billy's memfs, and
// New(bfs, MemOptions) the same over any billy.Filesystem. billy lacks
// node identity, ownership, times, hard links and special files, so a
// side table keeps, per object, a node id (the FileID), owner, mode,
// times and, for FIFOs, sockets and devices, the kind (billy holds an
// empty file). billy stays the authority for the namespace and contents:
// objects created or removed in billy behind the FS's back are noticed
// on the next access. Link fails with ErrNotSupported. FSStat reports
// synthetic figures (1 TiB total and free, 2^32 files minus the nodes
// known). Reads do not update access times.
//
// # Handles
//
// OS handles are the kernel's own file handles (name_to_handle_at, as
// knfsd and NFS-Ganesha's VFS use), authenticated with a keyed MAC:
//
//	[0]      0x01, layout version
//	[1]      n, length of the kernel handle (at most 34)
//	[2:6]    kernel handle type, big-endian
//	[6:6+n]  kernel handle bytes
//	[6+n:]   8 bytes: HMAC-SHA256(key, domain || bytes 0 to 6+n), truncated
//
// (14 bytes of overhead: 22 bytes on ext4, 26 on tmpfs.) They
// survive server restarts and renames, and name one inode: once its last
// link is gone the handle is stale (open_by_handle_at fails, or the
// cached descriptor shows nlink 0). The key is OSOptions.HandleKey, or 32
// random bytes kept in the export root's extended attribute
// "trusted.gonfsrdma.fhkey" (readable only with CAP_SYS_ADMIN), created
// on first use; losing or changing it makes every handle stale. The MAC
// also covers a domain, OSOptions.HandleDomain: the NFS server passes the
// export's handle header (handle version and fsid, nfs.HandleDomain), so
// a handle of one export relabelled with another export's fsid fails
// authentication (ErrStale) even where all exports share one key, and a
// change of the handle format cannot make old handles mean something new.
// Handles a client made from a kernel handle of its own choosing fail
// too.
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
// (EOPNOTSUPP) are refused by NewOS.
//
// Memory handles are 16 bytes: 'M', three zero bytes, a random 32-bit
// instance salt and the 64-bit node id. Node ids are never reused within
// an instance, so a removed object's handle stays stale; a handle of
// another instance (or from before a restart) carries another salt and
// is stale too. They survive renames, not restarts.
//
// Anything of the wrong shape is ErrBadHandle; well-formed handles that
// name nothing (or nothing in this export) are ErrStale. No input panics.
//
// # Open files
//
// The OS backend keeps a bounded LRU (OSOptions.MaxOpenFiles, default
// 1024) of file objects keyed by handle: each holds an O_PATH descriptor
// (used for fstat, *at calls as a directory, fchownat and utimensat with
// AT_EMPTY_PATH) and, for regular files, an O_RDONLY and/or O_RDWR
// descriptor opened on first read or write. READ is pread on the cached
// descriptor plus one fstat (for EOF and to notice unlinks) and does not
// allocate; ReadFD (the FDReader interface) instead lends that
// descriptor to a callback for the length of the call, so NFS READ can
// splice the file's pages to a socket. WRITE is pwrite, followed by
// fdatasync when stable; COMMIT is fsync. The cache owns every descriptor: methods take a reference for
// the duration of a call, eviction closes descriptors once the last
// reference is dropped, and Close releases them all (OpenFiles reports
// the count, the root's descriptor included). Remove, Rmdir and Rename
// evict an object whose last link they removed; objects unlinked by
// other processes are noticed by fstat (nlink 0) and reported stale.
// Read-only descriptors are cached so that executables served over NFS
// can still be executed locally (a cached O_RDWR descriptor would make
// exec fail with ETXTBSY); an O_RDWR one is opened only after a write.
//
// The memory backend caches open billy files (MemOptions.MaxOpenFiles,
// default 1024), closes them on eviction, removal and Close, and holds
// one mutex around all billy calls (billy filesystems are not safe for
// concurrent use).
//
// # Errors
//
// Methods return the vfs sentinels (ErrStale, ErrBadHandle,
// ErrNotSupported, ErrExclusiveMismatch, ErrBadCookie), fs.ErrClosed
// after Close, or a syscall.Errno, usually wrapped in *os.PathError or
// *os.LinkError. ToErrno reduces any of them to the errno to map, or
// reports false for a sentinel. Both backends return the errnos Linux
// does for the same operation (ENOENT, EEXIST, ENOTDIR, EISDIR,
// ENOTEMPTY, EINVAL for a directory moved below itself, EPERM for a
// hard link to a directory, EXDEV, ENAMETOOLONG), and, as knfsd's
// lookup_one_len does, EACCES for the names "", ".", ".." (outside
// Lookup) and names holding "/" or NUL. ReadAt and WriteAt fail with
// EISDIR on a directory and EINVAL on other non-regular files; ReadLink
// with EINVAL on anything but a symbolic link; SetAttr of a size with
// EISDIR or EINVAL likewise; Mknod of a type other than FIFO, socket,
// character or block device with EINVAL. An UNCHECKED create of a name
// that exists but is not a regular file fails with EEXIST, as in knfsd.
//
// # Identity
//
// Methods that take a Cred act as that identity (the caller's, after the
// NFS layer's squashing; the zero Cred is root). A Cred holding
// 0xffffffff (InvalidID) is refused with EINVAL before any system call.
//
// OS backend: the identity-dependent system calls run on one of
// IdentityThreads dedicated threads whose fsuid, fsgid and supplementary
// groups are the Cred's (raw per-thread setfsuid, setfsgid and setgroups
// on goroutines locked to their threads for good; ident_linux.go says why
// no other goroutine or new thread can see them, and why restoring the
// ids on a shared thread is not enough). Handles are resolved as
// the server (open_by_handle_at needs CAP_DAC_READ_SEARCH, which a
// non-zero fsuid drops), then the operation runs as the caller. So these
// rules are the kernel's, applied atomically with the operation:
//
//   - search permission for Lookup (".", ".." included) and every name
//     lookup; write and search permission on directories for Create,
//     Mkdir, Symlink, Mknod, Remove, Rmdir, Rename and Link;
//   - the sticky bit, for Remove, for the source of Rename and for a
//     target Rename replaces;
//   - write permission on a directory Rename moves to a new parent;
//   - the owner of new objects: the caller's fsuid, and fsgid or the
//     directory's group when it is set-group-ID, set by the creating
//     call itself (no chown follows, so there is no moment when the
//     object is anybody else's and no name to race for); a new directory
//     inherits set-group-ID; a non-member cannot create a
//     group-executable set-group-ID file in such a directory;
//   - chown (a new owner needs root, a new group ownership and
//     membership), chmod (ownership; set-group-ID dropped for a
//     non-member of the file's group), explicit times (ownership) and
//     times set to now (ownership or write permission), all EPERM or
//     EACCES as the kernel answers;
//   - set-user-ID and set-group-ID cleared by a write or truncation from
//     a caller without CAP_FSETID (anybody but root): WriteAt runs the
//     pwrite as the caller when the file has either bit, else as the
//     server (the outcome is the same and the data path pays no switch);
//     SetAttr truncates as the caller;
//   - device nodes need CAP_MKNOD (EPERM for anybody but root);
//   - fs.protected_hardlinks: Link of a file the caller neither owns nor
//     may read and write is EPERM (the link is made through the
//     descriptor's /proc/self/fd name, as linkat's AT_EMPTY_PATH needs
//     CAP_DAC_READ_SEARCH);
//   - POSIX ACLs and anything else the kernel checks, likewise.
//
// The mode of a new object is exactly the one asked for: where the
// process umask took bits away, fchmod restores them as the caller (the
// kernel's set-group-ID rules apply to that too). Symbolic links are
// always 0777.
//
// What runs as the server, because it uses descriptors the server opened
// or needs no permission: GetAttr, ReadLink, ReadAt, ReadFD, Commit,
// ReadDir, FSStat, and the writes of WriteAt to files without set-id
// bits. The NFS layer checks READ, WRITE, COMMIT, READDIR and truncation
// itself, with NFS's owner override (knfsd's NFSD_MAY_OWNER_OVERRIDE: the
// owner may write a file whose mode denies it, through the open that made
// it), and answers ACCESS from the mode bits; those are the only
// permission rules in code on the OS backend.
//
// Memory backend: it has no kernel, so it applies the same rules itself
// (mem.go: memPermit, memSticky, newOwner, killPriv, memPermitSetAttr),
// from the mode bits (no ACLs); vfstest's identity cases run against both
// backends with the same expectations.
//
// # Creating objects
//
// An EXCLUSIVE create keeps the verifier as knfsd does: mtime seconds =
// verf[0:4], atime seconds = verf[4:8] (big-endian, top bit cleared,
// nanoseconds zero); a retransmission finds the file, compares the times
// and a zero size, and returns the same file or ErrExclusiveMismatch. The
// NFS layer's following SETATTR of the real times retires the verifier.
//
// # ReadDir cookies
//
// A cookie is where to resume after an entry; 0 starts over. "." and
// ".." are listed like other entries. The rule both backends keep: an
// entry that is not removed is returned exactly once across a listing
// resumed from any cookie the backend issued, however many other entries
// are removed, added or renamed between calls; entries added or removed
// meanwhile may or may not appear, and an entry renamed meanwhile may
// appear under either name, both or neither. ReadDir also returns the
// cookie verifier, never zero, which changes only when old cookies can no
// longer be honoured; a nonzero cookie with a nonzero verifier other than
// the current one, or a cookie the backend never issued, is ErrBadCookie
// (NFS3ERR_BAD_COOKIE: the Linux client restarts its listing). A zero
// verifier is accepted with any cookie, as knfsd accepts any verifier.
//
// OS backend. The scheme is chosen per export from the statfs type of the
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
//   - "name" everywhere else, tmpfs included, or with OSOptions.NameCookies:
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
//     checking each entry with fstatat when the directory changed since,
//     so removed entries are skipped, and retaking it when the directory
//     changed and the snapshot is more than five seconds old: `rm -rf` of
//     50,000 entries reads the directory once every five seconds, not
//     once per call. Entries created after the
//     snapshot appear in the next listing. Two names with the same 63-bit
//     hash in one directory (odds about n*n/2^64: 1e-10 for 50,000 names)
//     share a cookie, and a page ending between them skips the second.
//
// The verifier is derived from the handle key and the scheme, so cookies
// stay valid across server restarts exactly as handles do, and a change
// of scheme refuses the old cookies. Cookies above 2^63-1, or any the
// kernel refuses to seek to, are ErrBadCookie.
//
// Memory backend: each directory numbers its entries in insertion order
// (".": 1, "..": 2, then 3, 4, ... never reused); an entry's cookie is its
// number and a listing returns entries with numbers above the cookie, in
// order (a sorted index, so resuming costs a binary search). The number
// survives every change to other entries; new entries come last; a
// renamed entry gets a new number. A listing's first call reconciles the
// numbers with billy (names billy gained behind the FS's back are
// numbered, names it lost dropped). A cookie never issued for the
// directory is ErrBadCookie; the verifier is the instance salt.
package vfs
