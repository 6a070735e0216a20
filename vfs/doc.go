// Package vfs is the backing-store layer under the NFS server: the
// handle-addressed FS interface one export is served from, the optional
// capability interfaces a backend may add (FDReader, AttrReader,
// AttrWriter, DirAttrChanger, DirLookuper, EntryLooker, AttrSetter, Locker, LinkSupporter), the identity (Cred) calls run as, the errors and the
// helpers every backend shares (PathErr, CheckName, CheckRegular,
// CheckChownIDs, ExclusiveTimes, ToErrno). It holds no backend.
//
// # Backends
//
// Each backend is its own package under vfs/, implements FS and whichever
// optional interfaces it can, keeps the contract below and passes the
// shared conformance suite vfs/vfstest (RunFSTests, the identity and
// directory-mutation cases) with the same expectations as the others:
//
//   - vfs/localfs: a directory of the host. It talks to the kernel
//     directly (file handles, *at system calls, pread/pwrite, getdents64)
//     and uses no go-billy: billy resolves paths, which the handle design
//     avoids. Implements FDReader, DirAttrChanger, DirLookuper, EntryLooker, AttrSetter and Locker.
//   - vfs/billyfs: over go-billy, in memory (go-billy's memfs) or over
//     any billy.Filesystem, with a side table for what billy lacks (node
//     identity, ownership, times, special files).
//
// A new backend (the CephFS one is the third) is one more such package:
// it imports vfs, never another backend, and the daemon picks it by the
// export's backend= option. Each backend's doc.go says how it keeps
// the contract (handles, open files, identity, cookies).
//
// # Buffer ownership
//
// Handles returned by a backend are fresh slices the caller owns; handles,
// names and data buffers passed in are only read (or, for ReadAt, written)
// during the call and never kept. Cred.GIDs may alias the RPC credential
// and is read only during the call.
//
// # Handles
//
// A handle is at most MaxHandle bytes, survives renames, and names exactly
// one object of one export; the backend defines its layout.
//
// Anything of the wrong shape is ErrBadHandle; well-formed handles that
// name nothing (or nothing in this export) are ErrStale. No input panics.
//
// # Errors
//
// Methods return the vfs sentinels (ErrStale, ErrBadHandle,
// ErrNotSupported, ErrExclusiveMismatch, ErrBadCookie), fs.ErrClosed
// after Close, or a syscall.Errno, usually wrapped in *os.PathError or
// *os.LinkError. ToErrno reduces any of them to the errno to map, or
// reports false for a sentinel. Every backend returns the errnos Linux
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
// Every backend applies the Unix rules for that identity, atomically with
// the operation (localfs by running the call with the caller's fsuid,
// fsgid and groups so that the kernel applies them, billyfs itself from
// the mode bits):
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
//   - on localfs, POSIX ACLs and anything else the kernel checks, likewise.
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
// ".." are listed like other entries. The rule every backend keeps: an
// entry that is not removed is returned exactly once across a listing
// resumed from any cookie the backend issued, however many other entries
// are removed, added or renamed between calls; entries added or removed
// meanwhile may or may not appear, and an entry renamed meanwhile may
// appear under either name, both or neither. ReadDir also returns the
// cookie verifier: zero where the backend's cookies stay valid for as
// long as its handles do (the verifier would never change while a client
// could use a cookie), otherwise nonzero, changing only when old cookies
// can no longer be honoured. Zero is what knfsd answers, and it matters
// to the Linux client: when the first reply of a listing brings a
// verifier other than the one it holds for the directory (zero for one
// it has not listed), it drops every page of its directory cache but the
// first, so each cold listing of a directory of more than one cache page
// (127 entries) read the rest of the first reply again (the 6.1 client,
// fs/nfs/dir.c find_and_lock_cache_page; issue 17's 20,000-name find
// took a READDIR more than knfsd's for it). A nonzero cookie with a
// nonzero verifier other than the current one, or a cookie the backend
// never issued, is ErrBadCookie (NFS3ERR_BAD_COOKIE: the Linux client
// restarts its listing). A zero verifier is accepted with any cookie, as
// knfsd accepts any verifier.
package vfs
