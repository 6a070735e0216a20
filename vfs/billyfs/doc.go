// Package billyfs is the backend over go-billy: an in-memory FS over
// go-billy's memfs (NewMem, the exports option backend=mem), or the same
// over any billy.Filesystem (New). It implements vfs.FS and no optional
// interface (no kernel files to splice, nothing else to see its locks).
// The contract it keeps is vfs's (see the vfs package documentation);
// this page says how.
//
// # Backend
//
// NewMem(Options) is an in-memory FS over go-billy's memfs, and
// New(bfs, Options) the same over any billy.Filesystem. billy lacks
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
// Handles are 16 bytes: 'M', three zero bytes, a random 32-bit
// instance salt and the 64-bit node id. Node ids are never reused within
// an instance, so a removed object's handle stays stale; a handle of
// another instance (or from before a restart) carries another salt and
// is stale too. They survive renames, not restarts.
//
// # Open files
//
// The backend caches open billy files (Options.MaxOpenFiles,
// default 1024), closes them on eviction, removal and Close, and holds
// one mutex around all billy calls (billy filesystems are not safe for
// concurrent use).
//
// # Identity
//
// It has no kernel, so it applies the same rules itself
// (mem.go: memPermit, memSticky, newOwner, killPriv, memPermitSetAttr),
// from the mode bits (no ACLs); vfstest's identity cases run against both
// backends with the same expectations.
//
// # ReadDir cookies
//
// Each directory numbers its entries in insertion order
// (".": 1, "..": 2, then 3, 4, ... never reused); an entry's cookie is its
// number and a listing returns entries with numbers above the cookie, in
// order (a sorted index, so resuming costs a binary search). The number
// survives every change to other entries; new entries come last; a
// renamed entry gets a new number. A listing's first call reconciles the
// numbers with billy (names billy gained behind the FS's back are
// numbered, names it lost dropped). A cookie never issued for the
// directory is ErrBadCookie; the verifier is zero (cookies live as long
// as the instance's handles).
package billyfs
