package localfs

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Granting a directory permission as the server, without the hop to an
// identity thread.
//
// asCaller hands every identity-dependent call of a caller other than the
// server to a dedicated locked thread (ident_linux.go): two thread
// wake-ups per call, more than the system call itself costs. For LOOKUP,
// REMOVE and RMDIR the caller's identity decides only one thing, whether
// the kernel grants it search (and write) permission on the directory,
// which generic_permission decides from the directory's mode, owner and
// group, and its POSIX ACL when it has one (fs/namei.c,
// acl_permission_check). Where that answer can be read off the mode
// bits, dirGrants grants it in user space and the call runs on the
// calling goroutine as the server; a grant is never inferred where the
// kernel might refuse, and everything else (a refusal included, so that
// the error is the kernel's) still runs as the caller:
//
//   - the filesystem is one whose permission check is generic_permission
//     (tmpfs, ext2/3/4, XFS, Btrfs) and the export's mount is not
//     idmapped (the owner the kernel compares would be mapped);
//   - the server is root, so that running as the server grants at least
//     what the caller is granted; were it refused anyway (a root without
//     CAP_DAC_OVERRIDE), the call is retried as the caller;
//   - the caller owns the directory (the owner's bits apply, ACL or
//     not), or the directory has no access ACL: fgetxattr of
//     system.posix_acl_access finds none (dirXattrAbsent: on a read
//     descriptor of the directory kept in its entry, not by a path
//     through /proc). That finding is kept in the directory's cache
//     entry with the ctime it was made at, and trusted while the ctime
//     is unchanged (setting an ACL changes it); it is kept only when
//     that ctime was over a second old, so that a change within the
//     same coarse timestamp tick cannot go unseen;
//   - for REMOVE and RMDIR, the directory is not sticky (then ownership
//     of the victim matters, which a stat before the unlink could not
//     decide without a race).
//
// LSMs see the server's own task either way (setfsuid changes no
// security label).
//
// The grant is read from a stat just before the call, not under the
// directory's lock as the kernel's own check is: a chmod, chown or ACL
// change of the directory that completes between that stat and the
// unlinkat (or openat) is not seen by that one call, which the kernel
// would then have refused. The window is one system call wide and only
// the directory's owner (or root) can open it; a call that must never
// race with such a change runs as the caller (a sticky directory does).

// Filesystem magic numbers (statfs f_type) whose inode permission check
// is generic_permission.
const (
	magicTmpfs = 0x01021994
	magicExt4  = 0xEF53 // also ext2 and ext3
	magicXFS   = 0x58465342
	magicBtrfs = 0x9123683E
)

// aclFreeMinAge is how old a directory's ctime must be for a finding that
// it has no ACL to be kept.
const aclFreeMinAge = time.Second

// initModePerm decides whether dirGrants may grant at all on this FS
// (FS.modePerm); why not is logged.
func (f *FS) initModePerm() {
	f.modePerm = false
	why := ""
	var sfs unix.Statfs_t
	switch {
	case unix.Geteuid() != 0:
		why = "the server is not root"
	case unix.Fstatfs(f.rootFD, &sfs) != nil:
		why = "statfs failed"
	default:
		switch sfs.Type {
		case magicTmpfs, magicExt4, magicXFS, magicBtrfs:
			idm, grpid, err := mountFlags(f.rootMount)
			f.grpid = grpid
			switch {
			case err != nil:
				why = err.Error()
			case idm:
				why = "the export's mount is idmapped"
			default:
				f.modePerm = true
				return
			}
		default:
			why = fmt.Sprintf("filesystem type %#x", sfs.Type)
		}
	}
	f.log.Debug("directory permissions are checked by the kernel as the caller on every call: " + why)
}

// mountFlags reports whether mount mountID (a mount ID from
// name_to_handle_at) is idmapped, and whether its filesystem gives new
// files their directory's group (the grpid or bsdgroups super option of
// ext4 and XFS), from /proc/self/mountinfo.
func mountFlags(mountID int) (idmapped, grpid bool, err error) {
	fi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, false, err
	}
	defer fi.Close()
	sc := bufio.NewScanner(fi)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	id := strconv.Itoa(mountID)
	for sc.Scan() {
		// mount ID, parent ID, major:minor, root, mount point, mount
		// options, optional fields..., "-", fstype, source, super options
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[0] != id {
			continue
		}
		for _, o := range strings.Split(fields[5], ",") {
			idmapped = idmapped || o == "idmapped"
		}
		for i, fl := range fields[6:] {
			if fl != "-" {
				continue
			}
			if j := 6 + i + 3; j < len(fields) {
				for _, o := range strings.Split(fields[j], ",") {
					grpid = grpid || o == "grpid" || o == "bsdgroups"
				}
			}
			break
		}
		return idmapped, grpid, nil
	}
	if err := sc.Err(); err != nil {
		return false, false, err
	}
	return false, false, fmt.Errorf("mount %d not in /proc/self/mountinfo", mountID)
}

// dirGrants reports whether the kernel grants c the permissions in may
// (vfs.MayExec, vfs.MayWrite) on directory de, decided from its current
// mode bits where that is certain (see the top of this file); false
// means "ask the kernel as the caller", not "refused". noSticky also
// requires de not to be sticky.
func (f *FS) dirGrants(c *vfs.Cred, de *fdEntry, may uint32, noSticky bool) bool {
	var st unix.Stat_t
	return f.dirGrantsStat(c, de, may, noSticky, &st)
}

// dirGrantsStat is dirGrants, leaving in st the directory's stat it
// decided from (when it got that far).
func (f *FS) dirGrantsStat(c *vfs.Cred, de *fdEntry, may uint32, noSticky bool, st *unix.Stat_t) bool {
	if !f.modePerm || c.UID == 0 {
		return false // root as root needs no hop; a squashed root is not 0
	}
	if unix.Fstat(de.fd, st) != nil {
		return false
	}
	return f.dirGrantsGiven(c, de, may, noSticky, st)
}

// dirGrantsWith is dirGrants deciding from dirStat, a stat of de this
// call has just taken (the directory's pre-operation attributes, taken
// microseconds earlier on the same descriptor), instead of one more
// fstat; with dirStat nil it is dirGrants. The fstat it saves is a
// system call per CREATE, REMOVE, RMDIR and LOOKUP; the window in which
// a chmod of the directory goes unseen by the call is the same (see the
// top of this file).
func (f *FS) dirGrantsWith(c *vfs.Cred, de *fdEntry, may uint32, noSticky bool, dirStat *unix.Stat_t) bool {
	if dirStat == nil {
		return f.dirGrants(c, de, may, noSticky)
	}
	return f.modePerm && c.UID != 0 && f.dirGrantsGiven(c, de, may, noSticky, dirStat)
}

// dirGrantsGiven is dirGrants' decision from st, a fresh stat of de.
func (f *FS) dirGrantsGiven(c *vfs.Cred, de *fdEntry, may uint32, noSticky bool, st *unix.Stat_t) bool {
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	if noSticky && st.Mode&unix.S_ISVTX != 0 {
		return false
	}
	a := vfs.Attr{Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid}
	if c.ModeBits(&a)&may != may {
		return false
	}
	return c.UID == st.Uid || f.aclFree(de, st)
}

// aclFree reports whether directory de, whose fresh stat is st, has no
// access ACL, trusting de's record of an earlier finding while st's ctime
// is the one it was made at.
func (f *FS) aclFree(de *fdEntry, st *unix.Stat_t) bool {
	ctime := st.Ctim.Nano()
	if ctime != 0 && de.aclFreeCtime.Load() == ctime {
		return true
	}
	if !f.dirXattrAbsent(de, &aclAccessName[0]) {
		return false // an ACL, or no answer
	}
	if ctime != 0 && time.Since(time.Unix(0, ctime)) > aclFreeMinAge {
		de.aclFreeCtime.Store(ctime)
	}
	return true
}

// refusedAsServer reports whether err is the kernel refusing the server
// itself, after which a call granted by dirGrants is run again as the
// caller.
func refusedAsServer(err error) bool { return err == unix.EACCES || err == unix.EPERM }

// aclAccessName and aclDefaultName are the xattr names of a POSIX ACL,
// NUL-terminated for the system call.
var (
	aclAccessName  = [...]byte{'s', 'y', 's', 't', 'e', 'm', '.', 'p', 'o', 's', 'i', 'x', '_', 'a', 'c', 'l', '_', 'a', 'c', 'c', 'e', 's', 's', 0}
	aclDefaultName = [...]byte{'s', 'y', 's', 't', 'e', 'm', '.', 'p', 'o', 's', 'i', 'x', '_', 'a', 'c', 'l', '_', 'd', 'e', 'f', 'a', 'u', 'l', 't', 0}
)

// dirXattrAbsent reports whether directory de has no extended attribute
// name (NUL-terminated): ENODATA, or EOPNOTSUPP from a filesystem without
// it; any other answer (the attribute, an error) is false.
//
// It asks fgetxattr on a descriptor that is not O_PATH (fgetxattr and
// getxattrat refuse O_PATH ones with EBADF): the root's own, or one
// opened by handle on first use and kept in the entry (dirReadFD). Only
// when that cannot be opened does it ask getxattr of /proc/self/fd/N,
// whose path walk through procfs costs several times the lookup itself.
// Both name the entry's inode, so the answer is the same.
func (f *FS) dirXattrAbsent(de *fdEntry, name *byte) bool {
	if fd := f.dirReadFD(de); fd >= 0 {
		_, _, e := unix.Syscall6(unix.SYS_FGETXATTR, uintptr(fd), uintptr(unsafe.Pointer(name)), 0, 0, 0, 0)
		return e == unix.ENODATA || e == unix.EOPNOTSUPP
	}
	var p [32]byte
	b := append(p[:0], "/proc/self/fd/"...)
	b = strconv.AppendInt(b, int64(de.fd), 10)
	b = append(b, 0)
	_, _, e := unix.Syscall6(unix.SYS_GETXATTR, uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(name)), 0, 0, 0, 0)
	return e == unix.ENODATA || e == unix.EOPNOTSUPP
}

// dirReadFD returns a descriptor of directory de that is not O_PATH, for
// fgetxattr: the root's (opened O_RDONLY by New), else de.rfd, opened
// O_RDONLY as the server on first use and kept until the entry is closed
// (as a regular file's read descriptor is); -1 if it cannot be opened
// (the directory is gone, or out of descriptors), and then the next call
// tries again.
func (f *FS) dirReadFD(de *fdEntry) int {
	if de.fd == f.rootFD {
		return de.fd
	}
	de.mu.Lock()
	defer de.mu.Unlock()
	if de.rfd >= 0 {
		return de.rfd
	}
	fd, err := openByHandle(f.rootFD, de.fh, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return -1
	}
	f.cache.open.Add(1)
	de.rfd = fd
	return fd
}
