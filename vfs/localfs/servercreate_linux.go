package localfs

import (
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Creating a regular file as the server, without the hop to an identity
// thread.
//
// CREATE as the caller (createAs on an identity thread) costs two thread
// wake-ups, as LOOKUP did before dirGrants (modeperm_linux.go). Where the
// kernel's answer for the caller is certain, createAsServer makes the
// same file as the server instead, and makes it appear under its name only
// once it is exactly what the caller's create would have left:
//
//  1. openat(dir, ".", O_TMPFILE|O_RDWR, 0): an unnamed inode, mode 0,
//     owned by the server; nobody can reach it.
//  2. fchown to the caller's uid and the group the kernel gives a
//     caller's new file (inode_init_owner, fs/inode.c: the directory's
//     group when it is set-group-ID, or always on a grpid/bsdgroups mount
//     of ext4 or XFS; else the caller's fsgid). Which rule the kernel took
//     is read off the unnamed inode's own group, which the kernel chose
//     the same way for the server: not the server's group means the
//     directory's; the directory's stat decides only when its group is the
//     server's own.
//  3. fchmod to the requested mode, and for EXCLUSIVE the verifier's
//     times, as createAs does afterwards.
//  4. linkat(fd, "", dir, name, AT_EMPTY_PATH): the name appears,
//     atomically, or EEXIST, answered as createAs answers it.
//
// The identity thread's path gives the same owner, group and mode because
// it always ends with the requested mode (createAs chmods when the umask
// took bits away) and, without set-id or sticky bits in that mode, no rule
// of the kernel's takes bits away or adds any (mode_strip_sgid and the
// chmod of a non-member drop only S_ISGID). The fast path is taken only
// when all of these hold, and anything it cannot decide, or any error
// before the link, runs createAs as the caller (so errors are the
// kernel's own for the caller):
//
//   - dirGrants grants write and search on the directory (its rules:
//     generic_permission filesystems, unmapped mount, root server, the
//     caller owns the directory or it has no access ACL);
//   - the directory has no default ACL (posix_acl_create would give the
//     file an access ACL and a mode from it): fgetxattr of
//     system.posix_acl_default (dirXattrAbsent) finds none, on every call (each create
//     moves the directory's ctime, so no finding could be kept);
//   - the requested mode has no set-user-ID, set-group-ID or sticky bit;
//   - the server is in the initial user namespace (every uid and gid maps,
//     so the fchown cannot fail on an unmapped id);
//   - neither user nor group quota limits are enforced on the filesystem
//     (quotactl_fd Q_XGETQSTAT, on every call unless it said ENOSYS, no
//     quota operations at all, which is kept; kernels before 5.14 have no
//     quotactl_fd and no fast path): XFS charges a chown by a
//     CAP_FOWNER process without checking limits, where the caller's own
//     create would have been refused (the VFS quota of ext4 and tmpfs
//     ignores hard limits for both paths alike: the identity thread keeps
//     CAP_SYS_RESOURCE);
//   - the filesystem makes O_TMPFILE files (tmpfs, ext4, XFS and Btrfs do;
//     EOPNOTSUPP turns the fast path off for the export).
//
// The window dirGrants leaves open stays the same: a chmod, chown or
// ACL change of the directory (a default ACL, or its set-group-ID bit)
// between the checks and the link is not seen by that one call.

// Quota interface constants (include/uapi/linux/dqblk_xfs.h, quota.h):
// Q_XGETQSTAT asks any quota implementation (the VFS's and XFS's) for its
// state; qs_flags is the 16-bit word at offset 2 of struct fs_quota_stat.
const (
	qXGetQStat     = 'X'<<8 + 5
	qSubCmdShift   = 8
	fsQuotaUDQEnfd = 0x0002
	fsQuotaUDQAcct = 0x0001
	fsQuotaGDQEnfd = 0x0008
	fsQuotaPDQEnfd = 0x0020 // project quota: the same for the server's file
)

// initServerCreate decides whether createAsServer may run at all on this
// FS (after initModePerm).
func (f *FS) initServerCreate() {
	f.serverCreate.Store(false)
	if !f.modePerm {
		return
	}
	why := ""
	switch {
	case !identityIDMap("/proc/self/uid_map"):
		why = "the server is not in the initial user namespace (uid_map)"
	case !identityIDMap("/proc/self/gid_map"):
		why = "the server is not in the initial user namespace (gid_map)"
	case !haveQuotactlFD():
		why = "no quotactl_fd (kernel before 5.14): quota limits cannot be checked"
	default:
		f.serverCreate.Store(true)
		return
	}
	f.log.Debug("CREATE runs as the caller on every call: " + why)
}

// identityIDMap reports whether the id map file (uid_map, gid_map) is the
// initial namespace's: every id maps to itself.
func identityIDMap(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) == 3 && fields[0] == "0" && fields[1] == "0" && fields[2] == "4294967295"
}

// haveQuotactlFD reports whether the kernel has quotactl_fd(2) (5.14):
// on a descriptor that is none it fails with EBADF, where a kernel
// without it says ENOSYS, which quotaStateOff would read as "no quota
// on this filesystem".
func haveQuotactlFD() bool {
	_, _, e := unix.Syscall6(unix.SYS_QUOTACTL_FD, uintptr(0x7fffffff), uintptr(qXGetQStat<<qSubCmdShift), 0, 0, 0, 0)
	return e != unix.ENOSYS
}

// quotaLimitsOff reports whether no user or group quota limit is enforced
// on the export's filesystem (quotaStateOff decides from the answer).
// An ENOSYS answer is kept (FS.noQuotaOps): the superblock has no quota
// operations (s_qcop, or its get_state, is NULL: tmpfs mounted without
// quota, Btrfs), and a filesystem sets those when it is mounted (tmpfs
// refuses to turn quota on at remount), so the answer cannot change for
// this export's filesystem; that saves a system call per CREATE there.
// Any other answer is asked again on every call (quota can be turned on
// and off on a mounted ext4 or XFS).
func (f *FS) quotaLimitsOff() bool {
	if f.noQuotaOps.Load() {
		return true
	}
	var qs [128]byte // struct fs_quota_stat is 80 bytes
	cmd := uintptr(qXGetQStat<<qSubCmdShift | 0 /* USRQUOTA */)
	e := quotactlFD(f.rootFD, cmd, &qs[0])
	if e == unix.ENOSYS {
		f.noQuotaOps.Store(true)
	}
	return quotaStateOff(e, *(*uint16)(unsafe.Pointer(&qs[2])))
}

// quotactlFD is quotactl_fd(fd, cmd, 0, addr); a variable so that a test
// can count the calls and choose the answer.
var quotactlFD = func(fd int, cmd uintptr, addr *byte) unix.Errno {
	_, _, e := unix.Syscall6(unix.SYS_QUOTACTL_FD, uintptr(fd), cmd, 0, uintptr(unsafe.Pointer(addr)), 0, 0)
	return e
}

// quotaStateOff decides from quotactl's errno e and, when it succeeded,
// qs_flags: a filesystem without quota support (ENOSYS: no quotactl
// operations, as tmpfs and Btrfs without quota; the system call itself
// exists, initServerCreate checked) or one whose state shows
// neither user nor group limits enforced. Any other answer is "maybe".
func quotaStateOff(e unix.Errno, flags uint16) bool {
	switch e {
	case unix.ENOSYS:
		return true
	case 0:
		return flags&(fsQuotaUDQEnfd|fsQuotaGDQEnfd) == 0
	}
	return false
}

// noDefaultACL reports whether directory de has no default ACL.
func (f *FS) noDefaultACL(de *fdEntry) bool { return f.dirXattrAbsent(de, &aclDefaultName[0]) }

// createAsServer is Create's fast path (see the top of this file). done
// false means it changed nothing and Create must run createAs as the
// caller; done true means h, a and err are the call's answer.
//
// dirStat, when not nil, is the stat of de the call has just taken (its
// pre-operation attributes), decided from instead of another fstat.
func (f *FS) createAsServer(c *vfs.Cred, de *fdEntry, name string, mode uint32, guarded, exclusive bool, verf [8]byte, dirStat *unix.Stat_t) (h vfs.Handle, a vfs.Attr, err error, done bool) {
	if !f.serverCreate.Load() || mode&0o7000 != 0 {
		return nil, vfs.Attr{}, nil, false
	}
	var dst unix.Stat_t
	granted := false
	if dirStat != nil {
		dst = *dirStat
		granted = f.dirGrantsWith(c, de, vfs.MayWrite|vfs.MayExec, false, &dst)
	} else {
		granted = f.dirGrantsStat(c, de, vfs.MayWrite|vfs.MayExec, false, &dst)
	}
	if !granted || !f.noDefaultACL(de) || !f.quotaLimitsOff() {
		return nil, vfs.Attr{}, nil, false
	}
	procIdent.once.Do(loadProcIdent)
	before := f.moves.epoch.Load()
	fd, err := unix.Openat(de.fd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.EOPNOTSUPP || err == unix.EISDIR {
			f.serverCreate.Store(false)
			f.log.Debug("CREATE runs as the caller from now on: O_TMPFILE: " + err.Error())
		}
		return nil, vfs.Attr{}, nil, false
	}
	fail := func() (vfs.Handle, vfs.Attr, error, bool) {
		unix.Close(fd) // the unnamed inode goes with it
		return nil, vfs.Attr{}, nil, false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return fail()
	}
	gid := c.GID
	switch {
	case st.Gid != procIdent.gid:
		gid = st.Gid // the kernel gave it the directory's group
	case dst.Gid == procIdent.gid && (dst.Mode&unix.S_ISGID != 0 || f.grpid):
		gid = dst.Gid // the directory's group is the server's: its stat decides
	}
	if unix.Fchown(fd, int(c.UID), int(gid)) != nil || unix.Fchmod(fd, mode&0o777) != nil {
		return fail()
	}
	if exclusive {
		va, vm := vfs.ExclusiveTimes(verf)
		ts := []unix.Timespec{{Sec: va}, {Sec: vm}}
		if unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH) != nil {
			return fail()
		}
	}
	err = unix.Linkat(fd, "", de.fd, name, unix.AT_EMPTY_PATH)
	if err == unix.EEXIST {
		unix.Close(fd)
		if guarded && !exclusive {
			return nil, vfs.Attr{}, &os.PathError{Op: "create", Path: name, Err: err}, true
		}
		h, a, err = f.existing(de, name, exclusive, verf, before)
		return h, a, err, true
	}
	if err != nil {
		return fail()
	}
	h, a, err = f.adopt(fd, "create", name, f.childEpoch(de, before))
	return h, a, err, true
}
