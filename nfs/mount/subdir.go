package mount

import (
	"strings"
	"syscall"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// WalkDir resolves a MOUNT of a directory below an export, as mountd: rel
// (the path below the export root, exports.Table.ForMount's rest) is
// looked up component by component from the root of fs as the server,
// without following symbolic links, and must end at a directory. It
// returns the directory's backend handle, or MNT3ERR_NOTDIR when a
// component is not a directory (a file, a symbolic link) and
// MNT3ERR_NOENT for anything else (a missing name, an empty, "." or ".."
// component). This is the one place a backend error becomes a mountstat3.
func WalkDir(fs vfs.FS, rel string) (vfs.Handle, Stat) {
	h := fs.Root()
	for _, name := range strings.Split(rel, "/") {
		if name == "" || name == "." || name == ".." {
			return nil, StatNoEnt
		}
		next, attr, err := fs.Lookup(vfs.Cred{}, h, name)
		if err != nil {
			if errno, ok := vfs.ToErrno(err); ok && errno == syscall.ENOTDIR {
				return nil, StatNotDir
			}
			return nil, StatNoEnt
		}
		if attr.Type != vfs.TypeDir {
			return nil, StatNotDir
		}
		h = next
	}
	return h, StatOK
}
