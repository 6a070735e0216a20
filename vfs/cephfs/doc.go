// Package cephfs is the CephFS backend: a vfs.FS over a directory of a
// CephFS file system, through libcephfs's low-level API (calls by inode,
// ceph_ll_*), so that several gonfsrdma processes ("heads") can export
// the same directory with handles that are valid on all of them.
//
// # Build
//
// The backend is cgo over libcephfs and librados and is compiled only
// with the build tag "ceph" (and cgo, on Linux): `make build-ceph`, or
// go build -tags ceph, with libcephfs-dev and librados-dev installed
// (scripts/deps.sh installs them). Without the tag, New fails with
// ErrNotBuilt, which says how to get it, and the binary needs no Ceph
// library. This package and verbs/ are the only ones with cgo (make lint
// checks it, with the tag). The cluster connection comes from go-ceph's
// rados package (configuration file, client name, keyring, connect); the
// file system is mounted on it with ceph_create_from_rados, and every
// file operation is a ceph_ll_* call made here: go-ceph's cephfs package
// wraps only the path-based API, which cannot resolve a handle.
//
// # Handles
//
// A handle names an inode by its CephFS identity, authenticated with a
// keyed MAC:
//
//	[0]      0xCE, layout version
//	[1:9]    inode number, big-endian
//	[9:17]   snapshot id (CEPH_NOSNAP for the live file system)
//	[17:25]  the file system's id (fscid)
//	[25:33]  HMAC-SHA256(key, domain || bytes 0 to 25), truncated
//
// (33 bytes.) Inode numbers are the cluster's, so a handle made by one
// head resolves on every other head that exports the same directory with
// the same key and domain, and after restarts: ceph_ll_lookup_vino finds
// the inode in libcephfs's cache or asks the MDS. An inode whose last link
// is gone is stale (the MDS answers ESTALE, or its link count is 0); so
// is a handle of another file system, key or domain. Anything of the wrong
// shape is vfs.ErrBadHandle. No input panics (FuzzHandleDecode).
//
// The key is Options.HandleKey, or 32 random bytes kept in the export
// root's extended attribute "trusted.gonfsrdma.fhkey" (KeyXattr), created
// with XATTR_CREATE on first use so that heads started together agree;
// every head mounting the directory reads the same one. With
// Options.HandleKey, every head must be given the same key. Kernel
// clients of the file system need CAP_SYS_ADMIN to read trusted xattrs;
// libcephfs clients with access to the directory can, so the key is as
// secret as the cluster's client credentials.
//
// Handles are not checked to lie inside the export root beyond the MAC,
// which proves this export issued them: a directory moved out of the
// export by another CephFS client stays reachable through handles issued
// before (as with knfsd's no_subtree_check). ".." of the export root is
// the root.
//
// # Open files and inode references
//
// The FS keeps a bounded LRU (Options.MaxOpenFiles, default 1024) of the
// inodes it holds a libcephfs reference on, each with, for regular files,
// a read-only and/or read-write open file (ceph_ll_open as the server,
// opened on first read or write, closed on eviction, removal or Close).
// Methods take a reference on a node for the duration of a call; the
// libcephfs reference and open files are released when the last one is
// dropped. The root is held until Close. OpenFiles reports the inodes
// held. READ is ceph_ll_read straight into the caller's buffer (on RDMA,
// the registered payload buffer): no intermediate copy in this package
// (libcephfs copies from its object cache); WRITE is ceph_ll_write,
// followed by ceph_ll_fsync when stable; COMMIT is ceph_ll_sync_inode.
//
// # Calls per NFS procedure
//
// The FS counts its libcephfs calls by kind (Calls). READ and WRITE go
// through vfs.AttrReader and vfs.AttrWriter: the getattr the read needs
// for its end-of-file flag, and the one the write needs for the
// set-user-ID rule, give the reply its attributes, so the NFS layer asks
// for none of its own. Per call, with the file cached (conformance
// TestCephCallsPerProcedure holds each to it): READ 1 getattr + 1 read;
// WRITE 2 getattrs (before, for permission and wcc; after) + 1 write;
// GETATTR 1 getattr; CREATE 2 getattrs (the directory before and after;
// the new file's attributes are the create's) + 1 create, whose open file
// later WRITEs use; REMOVE 2 getattrs + 1
// lookup (which cached inode goes) + 1 unlink + the close of the removed
// file's open file. A getattr libcephfs answers from the capabilities it
// holds asks the MDS nothing; CREATE and REMOVE are one MDS request each.
// An unlinked file whose open file the FS still holds costs the MDS no
// capability revoke; one evicted from the LRU before (its open file
// closed) costs a revoke and the client's answer (MDS counters, 2,000
// creates then removes: 980 revokes with the default LRU, 3 with one
// holding every file; NFS-Ganesha's FSAL_CEPH 980).
//
// # Memory
//
// libcephfs allocates with malloc: its messenger threads receive every
// reply from the OSDs and the MDS into new buffers. A C constructor of
// this package sets glibc's M_ARENA_MAX to 1 before the Go runtime starts
// a thread (arena.go; not when MALLOC_ARENA_MAX or glibc.malloc.arena_max
// in GLIBC_TUNABLES says otherwise), so that freed buffers stay mapped in
// the main arena and are reused, instead of per-thread heaps that are
// unmapped as they empty and re-zeroed by the kernel on the next reply.
// It applies to the whole process of a binary built with the backend; Go
// itself does not use malloc.
//
// # Identity
//
// Methods that take a Cred pass it to libcephfs as a UserPerm (uid, gid,
// supplementary groups; one per call, freed after it), and libcephfs
// checks permissions with it as the kernel would: search and write
// permission on directories, sticky directories, ownership for chmod,
// chown and times, set-group-ID inheritance from directories. The zero
// Cred is root; nothing else runs as root except what the vfs.FS contract
// runs as the server (GetAttr, ReadLink, ReadAt, Commit, ReadDir, FSStat,
// and the data of WriteAt, through the server's open files). A Cred
// holding vfs.InvalidID is EINVAL before any call.
//
// Where Pacific's libcephfs does not apply a kernel rule, the FS does,
// and says so at the call: set-user-ID and set-group-ID cleared by a
// write or truncation from anybody but root and by chown of a
// non-directory; set-group-ID dropped from a group-executable file a
// non-member creates in a set-group-ID directory; device nodes only for
// root (CAP_MKNOD); protected hard links; write permission on a directory
// moved to a new parent; an exact mode on new objects; rename of a name
// onto itself or onto another link of the same file does nothing (libcephfs
// would unlink it).
//
// # Renames
//
// A rule the FS applies itself is only as good as the moment it is
// checked in: Rename looks up what a name is, decides (a directory moved
// to a new parent by a caller who may not write it is EACCES; the same
// object under both names does nothing), then calls ceph_ll_rename, which
// renames whatever the name is by then. So every method that changes a
// directory's entries holds that directory's name lock (namelock.go):
// Create, Mkdir, Symlink, Mknod, Link, Remove and Rmdir shared, so they
// run in parallel with each other; Rename exclusively for both parents,
// taken in a fixed order, from its first lookup until ceph_ll_rename has
// returned, as the kernel holds a parent's lock around the same checks
// (not during the link-count refresh after a directory moved to a new
// parent, which costs about a second and depends on no entry). The locks
// order the calls of one FS (one head); a change made in the same instant
// through another head or another CephFS client is not ordered by them.
//
// Rename never hands libcephfs a missing source: Pacific's ceph_ll_rename
// (16.2.15) marks the target's cached dentry as being renamed before it
// looks the source up, returns ENOENT without clearing the mark when the
// source is missing, and every later lookup of the target name through
// that mount then waits forever for a rename that is not under way. A
// source the FS's own lookup does not find is answered from the caller's
// lookup (EACCES or ENOENT), and under the name lock no call of the same
// FS can take the source away before ceph_ll_rename looks for it (vfstest
// IdentityRenameSwapRace, TestRenameMissingSourceLeavesTargetUsable).
//
// # Locks
//
// The FS is a vfs.Locker: NLM locks are mirrored as CephFS byte-range
// locks (ceph_ll_setlk, ceph_ll_getlk, never waiting), which the MDS
// arbitrates between all clients of the file system, so a lock through one
// head conflicts with locks through any other head and with fcntl locks of
// kernel and FUSE clients. Each FileLocks has its own open file and holds
// the inode; every lock owner gets its own CephFS owner number (unique in
// the process: CephFS tells owners apart by session and number). Closing
// a FileLocks releases its owners' locks.
//
// # Sessions of restarted heads
//
// With Options.SessionUUID (the daemon derives one per export from an id
// kept in its state directory), New first ends the MDS session that an
// earlier run of the same head left (ceph_start_reclaim with
// CEPH_RECLAIM_RESET, then ceph_set_uuid, as NFS-Ganesha does): a crashed
// head's capabilities and locks are released when it restarts instead of
// after the MDS's session timeout, during which other heads' writers to
// the files it had open wait.
//
// # Grace shared by the heads
//
// With Options.HeadID, New opens the file system's grace records (one
// RADOS object in its first data pool, namespace GraceNamespace, an omap
// key per head; grace.go): a start with Options.GraceUntil in the future
// records that end before the reclaim above releases the previous run's
// locks, any other start removes the head's key. FS.GraceEnd is the latest
// end of all heads, which the daemon's lock manager treats as its own
// grace; PublishGrace moves a head's end. Not in CephFS itself: the MDS
// would hold a setxattr or create until the dead session's capabilities
// time out.
//
// # Client debug logs
//
// Pacific's client debug subsystems default to "0/5": nothing in the log
// file, but every ll_* call formatted into the in-memory crash ring. New
// sets those left at their defaults to "0/0" (clientLogDefaults); a level
// set in ceph.conf or the environment stays.
//
// # ReadDir cookies
//
// A cookie is libcephfs's directory position after the entry
// (ceph_telldir): CephFS lists a directory in the order of its names'
// hashes and the position encodes the fragment and hash, so it belongs to
// the entry and does not move when other entries come and go (like ext4's
// htree offsets). Each ReadDir opens the directory, seeks to the cookie and
// reads on. Positions above 2^61-1 are never issued and are
// vfs.ErrBadCookie. The verifier is zero on every head and across
// restarts: positions stay valid as long as handles do (vfs package
// documentation: the Linux client keeps its whole directory cache only
// when the verifier does not change from the zero it starts with).
//
// # Link counts after a directory moves
//
// libcephfs holding a directory's exclusive capability keeps its link
// count (2 + subdirectories) from before a subdirectory moved out of it
// (Pacific; the MDS and other clients have the right one). After such a
// move, Rename mounts the directory a second time, reads the old parent
// through that mount and unmounts it, which makes the MDS take the
// capability back with the current count: a directory moved to another
// parent costs one extra mount and unmount (about a second on the test
// cluster).
//
// # Errors
//
// libcephfs returns negative errnos; they are returned as syscall.Errno in
// *os.PathError, which vfs.ToErrno maps in the one place. FSSTAT reports
// the cluster's space; CephFS has no limit on files, so the file figures
// are total 2^63-1, free = available = total - files in use.
package cephfs
