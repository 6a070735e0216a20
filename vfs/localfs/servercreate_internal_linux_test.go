package localfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

// createOutcome is what a CREATE left: the error's errno (0: none), and
// the file's owner, group, full mode, size, times' seconds and access
// ACL (as stored).
type createOutcome struct {
	errno        syscall.Errno
	exclMismatch bool
	uid, gid     uint32
	mode         uint32
	size         int64
	atime, mtime int64
	acl          string
}

func (o createOutcome) String() string {
	if o.errno != 0 || o.exclMismatch {
		return fmt.Sprintf("error %v (exclusive mismatch %v)", o.errno, o.exclMismatch)
	}
	return fmt.Sprintf("%d:%d mode %#o size %d times %d/%d acl %q", o.uid, o.gid, o.mode, o.size, o.atime, o.mtime, o.acl)
}

// outcomeOf reads the outcome of a CREATE that returned err and made (or
// found) path; the times only for EXCLUSIVE, where they hold the
// verifier (otherwise they are the clock's).
func outcomeOf(t *testing.T, path string, exclusive bool, err error) createOutcome {
	t.Helper()
	var o createOutcome
	if err != nil {
		o.exclMismatch = errors.Is(err, vfs.ErrExclusiveMismatch)
		if !errors.As(err, &o.errno) && !o.exclMismatch {
			t.Fatalf("CREATE error without an errno: %v", err)
		}
		return o
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatalf("CREATE succeeded but %s: %v", path, err)
	}
	o.uid, o.gid, o.mode, o.size = st.Uid, st.Gid, st.Mode, st.Size
	if exclusive {
		o.atime, o.mtime = st.Atim.Sec, st.Mtim.Sec // the verifier's
	}
	buf := make([]byte, 256)
	if n, err := unix.Lgetxattr(path, "system.posix_acl_access", buf); err == nil {
		o.acl = string(buf[:n])
	}
	return o
}

// TestServerCreateMatchesKernel makes the same files through CREATE's
// fast path (createAsServer: made as the server, then given to the caller)
// and through the identity thread (createAs as the caller) in twin
// directories with the same owner, group, mode and ACLs, and compares what
// each left: error, owner, group, mode, size, times and ACL; the fast path
// must be taken exactly where its conditions hold (no hop), and must never
// show the name with another owner or mode. On the temporary directory's
// filesystem and on a tmpfs.
func TestServerCreateMatchesKernel(t *testing.T) {
	vfstest.RequireRoot(t)
	onTempAndTmpfs(t, func(t *testing.T, root string) { testServerCreate(t, root, false) })
	// ext4 mounted with grpid: every new file takes its directory's
	// group, set-group-ID or not.
	t.Run("ext4-grpid", func(t *testing.T) {
		mnt, err := loopMount(t, "ext4", 64, "grpid", "-q")
		if err != nil {
			t.Fatal(err)
		}
		testServerCreate(t, mnt, true)
	})
}

func testServerCreate(t *testing.T, root string, grpid bool) {
	f := newExportAt(t, root)
	fastOK := f.serverCreate.Load()
	if f.grpid != grpid {
		t.Fatalf("grpid mount option seen %v on %s, want %v", f.grpid, root, grpid)
	}
	t.Logf("fast CREATE on %s (type %#x): %v", root, statfsType(t, root), fastOK)
	if !fastOK && os.Getenv("CI") == "true" {
		t.Fatal("CI=true but CREATE's fast path is off (not root, or not the initial user namespace?)")
	}
	server := vfs.Cred{UID: 0, GID: 0}
	user := vfs.Cred{UID: 1000, GID: 1000}
	member := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{2000}}

	type dirSpec struct {
		name       string
		mode       uint32 // with S_ISGID / S_ISVTX
		uid, gid   int
		defaultACL bool // a default ACL granting the owner rwx, others r-x
		accessACL  bool // an access ACL refusing uid 1000 by a named entry
		fast       bool // the fast path's conditions hold (for an allowed mode)
		callers    []vfs.Cred
	}
	dirs := []dirSpec{
		{name: "open", mode: 0o777, fast: true},
		{name: "own", mode: 0o755, uid: 1000, gid: 1000, fast: true},
		{name: "group", mode: 0o777, gid: 2000, fast: true, callers: []vfs.Cred{user, member}},
		{name: "sgid-root", mode: 0o2777, fast: true, callers: []vfs.Cred{user, member}},
		{name: "sgid-group", mode: 0o2777, gid: 2000, fast: true, callers: []vfs.Cred{user, member}},
		{name: "sticky", mode: 0o1777, fast: true},
		{name: "readonly", mode: 0o555},
		{name: "noexec", mode: 0o666},
		{name: "acl-refuses", mode: 0o777, accessACL: true},
		{name: "default-acl", mode: 0o777, defaultACL: true},
	}
	modes := []uint32{0o644, 0o600, 0o777, 0, 0o4755, 0o2755, 0o2644, 0o1644}
	type how struct {
		name               string
		guarded, exclusive bool
	}
	hows := []how{{"unchecked", false, false}, {"guarded", true, false}, {"exclusive", false, true}}
	verf := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	other := [8]byte{9, 9, 9, 9, 9, 9, 9, 9}

	// mkdir makes directory name per d, with a root-owned file "taken".
	mkdir := func(name string, d dirSpec) vfs.Handle {
		t.Helper()
		var acl map[uint32]uint16
		if d.accessACL {
			acl = map[uint32]uint16{1000: 0}
		}
		var defaultACL uint32
		if d.defaultACL {
			defaultACL = 0o755
		}
		return makeCaseDir(t, f, server, root, name, d.uid, d.gid, d.mode, acl, defaultACL)
	}

	fastCalls := 0
	for di, d := range dirs {
		callers := d.callers
		if callers == nil {
			callers = []vfs.Cred{user}
		}
		for ci, c := range callers {
			fast := mkdir(fmt.Sprintf("d%d-%d-fast", di, ci), d)
			slow := mkdir(fmt.Sprintf("d%d-%d-slow", di, ci), d)
			for _, mode := range modes {
				for _, hw := range hows {
					name := fmt.Sprintf("f%o-%s", mode, hw.name)
					what := fmt.Sprintf("%s dir, caller %d groups %v, mode %#o, %s", d.name, c.UID, c.GIDs, mode, hw.name)
					create := func(dir vfs.Handle, on bool, name string, v [8]byte) (error, uint64) {
						f.serverCreate.Store(on && fastOK)
						defer f.serverCreate.Store(fastOK)
						var err error
						n := hopsDuring(func() { _, _, err = f.Create(c, dir, name, mode, hw.guarded, hw.exclusive, v) })
						return err, n
					}
					compare := func(label, name string, v [8]byte, wantFast bool) {
						t.Helper()
						errF, hops := create(fast, true, name, v)
						errS, _ := create(slow, false, name, v)
						dirF, dirS := filepath.Join(root, fmt.Sprintf("d%d-%d-fast", di, ci)), filepath.Join(root, fmt.Sprintf("d%d-%d-slow", di, ci))
						got, want := outcomeOf(t, filepath.Join(dirF, name), hw.exclusive, errF), outcomeOf(t, filepath.Join(dirS, name), hw.exclusive, errS)
						if got != want {
							t.Errorf("%s, %s: fast path %v, as the caller %v", what, label, got, want)
						}
						wantHops := uint64(1)
						if wantFast && fastOK {
							wantHops = 0
						}
						if hops != wantHops {
							t.Errorf("%s, %s: %d hops to the identity thread, want %d", what, label, hops, wantHops)
						}
						if hops == 0 {
							fastCalls++
						}
					}
					allowed := d.fast && mode&0o7000 == 0
					compare("new name", name, verf, allowed)
					// The same call again: the name is taken by the file
					// just made (EXCLUSIVE: a retransmission, then another
					// verifier).
					compare("again", name, verf, allowed)
					if hw.exclusive {
						compare("again, other verifier", name, other, allowed)
					}
					// A name taken by root's file.
					compare("root's file", "taken", verf, allowed)
				}
			}
		}
	}
	if fastOK && fastCalls == 0 {
		t.Error("no CREATE took the fast path")
	}

	// The name never shows with another owner or mode: a watcher stats
	// it while it is made.
	if !fastOK {
		return
	}
	d := dirs[0]
	dir := mkdir("watched", d)
	wantGID := uint32(1000)
	if grpid {
		wantGID = 0 // the directory's
	}
	var seen, wrong atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var st unix.Stat_t
		for i := 0; ; i = (i + 1) % 200 {
			select {
			case <-stop:
				return
			default:
			}
			if unix.Lstat(filepath.Join(root, "watched", fmt.Sprintf("w%d", i)), &st) == nil {
				seen.Add(1)
				if st.Uid != 1000 || st.Gid != wantGID || st.Mode != unix.S_IFREG|0o640 {
					wrong.Add(1)
				}
			}
		}
	}()
	for i := range 200 {
		if _, _, err := f.Create(user, dir, fmt.Sprintf("w%d", i), 0o640, true, false, verf); err != nil {
			t.Errorf("CREATE w%d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
	if wrong.Load() != 0 {
		t.Errorf("the watcher saw a new name %d times with another owner, group or mode (of %d sightings)", wrong.Load(), seen.Load())
	}
}

// CREATE's fast path is off while user or group quota limits are
// enforced: on XFS a caller at its inode hard limit is refused by the
// kernel, and the file must not get past it by being made as the server
// (XFS charges a CAP_FOWNER chown without checking limits). The answer of
// quotactl is decoded as the kernel gives it; where the kernel can mount
// XFS with user quota, CREATE over the limit is refused as the caller;
// filesystems without quota leave the fast path on.
func TestServerCreateQuota(t *testing.T) {
	vfstest.RequireRoot(t)
	for _, c := range []struct {
		e     unix.Errno
		flags uint16
		off   bool
	}{
		{unix.ENOSYS, 0, true},
		{0, 0, true},
		{0, fsQuotaUDQAcct, true},
		{0, fsQuotaPDQEnfd, true},
		{0, fsQuotaUDQAcct | fsQuotaUDQEnfd, false},
		{0, fsQuotaGDQEnfd, false},
		{unix.EINVAL, 0, false},
		{unix.EPERM, 0, false},
	} {
		if got := quotaStateOff(c.e, c.flags); got != c.off {
			t.Errorf("quotactl answer %v flags %#x: limits off %v, want %v", c.e, c.flags, got, c.off)
		}
	}
	// quotactl_fd came with 5.14; without it there is no fast path.
	var major, minor int
	fmt.Sscanf(kernelRelease(), "%d.%d", &major, &minor)
	if want := major > 5 || major == 5 && minor >= 14; haveQuotactlFD() != want {
		t.Fatalf("kernel %s: quotactl_fd found %v, want %v", kernelRelease(), haveQuotactlFD(), want)
	}
	tmp := t.TempDir()
	g, err := New(tmp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !g.quotaLimitsOff() {
		t.Errorf("quota limits seen on %s (type %#x), which enforces none", tmp, statfsType(t, tmp))
	}

	mnt, why := xfsQuotaMount(t)
	if mnt == "" {
		t.Logf("EDQUOT not checked end to end: %s", why)
		return
	}
	if err := os.Chmod(mnt, 0o777); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("xfs_quota", "-x", "-c", "limit -u isoft=2 ihard=2 1000", mnt).CombinedOutput(); err != nil {
		t.Fatalf("xfs_quota limit: %v\n%s", err, out)
	}
	f, err := New(mnt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.quotaLimitsOff() {
		t.Fatal("quotaLimitsOff on an XFS mount with user quota enforced")
	}
	user := vfs.Cred{UID: 1000, GID: 1000}
	var errs []error
	n := hopsDuring(func() {
		for i := range 3 {
			_, _, err := f.Create(user, f.Root(), fmt.Sprintf("q%d", i), 0o644, true, false, [8]byte{})
			errs = append(errs, err)
		}
	})
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], unix.EDQUOT) {
		t.Errorf("CREATE of 3 files with an inode hard limit of 2: %v, want the third refused with EDQUOT", errs)
	}
	if n != 3 {
		t.Errorf("%d of 3 CREATEs went to the identity thread, want all (quota enforced)", n)
	}
}

func statfsType(t testing.TB, dir string) int64 {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		t.Fatal(err)
	}
	return s.Type
}

// loopMount makes a sparse image of sizeMB, mkfs.typ with mkfsArgs, and
// loop-mounts it with the mount options opts for the duration of the
// test; the error is the mount's (the image stays for another try).
func loopMount(t *testing.T, typ string, sizeMB int64, opts string, mkfsArgs ...string) (string, error) {
	t.Helper()
	for _, tool := range []string{"mkfs." + typ, "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but %s is not installed (scripts/deps.sh installs it)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := t.TempDir()
	img := filepath.Join(dir, typ+".img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, sizeMB<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs."+typ, append(mkfsArgs, img)...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.%s: %v\n%s", typ, err, out)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", typ, "-o", "loop,"+opts, img, mnt).CombinedOutput(); err != nil {
		return img, fmt.Errorf("mount %s -o %s: %v: %s", typ, opts, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	})
	return mnt, nil
}

// xfsQuotaMount loop-mounts a 320 MB XFS image with user quota enforced,
// for the duration of the test; "" and why when this kernel's XFS has no
// quota support (it refuses uquota but mounts the same image without).
func xfsQuotaMount(t *testing.T) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("xfs_quota"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but xfs_quota is not installed (scripts/deps.sh installs xfsprogs)")
		}
		t.Skip("xfs_quota is not installed")
	}
	mnt, err := loopMount(t, "xfs", 320, "uquota", "-q")
	if err == nil {
		return mnt, ""
	}
	img := mnt
	mnt = filepath.Join(filepath.Dir(img), "mnt")
	if out, err2 := exec.Command("mount", "-t", "xfs", "-o", "loop", img, mnt).CombinedOutput(); err2 != nil {
		t.Fatalf("%v; and without uquota: %v: %s", err, err2, out)
	}
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount %s: %v\n%s", mnt, err, out)
	}
	return "", "this kernel's XFS refuses uquota but mounts the image without it (no quota support): no filesystem here enforces the limit the fast path would pass (" + err.Error() + ")"
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// makeCaseDir makes directory root/name of a comparison case, with a
// root-owned file "taken" in it: owner uid:gid, mode (with S_ISGID or
// S_ISVTX), an access ACL with the named-user entries of acl unless it
// is nil, a default ACL of mode defaultACL unless it is 0. It returns
// the directory's handle, looked up as server.
func makeCaseDir(t *testing.T, f *FS, server vfs.Cred, root, name string, uid, gid int, mode uint32, acl map[uint32]uint16, defaultACL uint32) vfs.Handle {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "taken"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if acl != nil {
		if err := unix.Setxattr(p, "system.posix_acl_access", aclXattr(mode, acl), 0); err != nil {
			t.Fatalf("setting an ACL: %v", err)
		}
	}
	if defaultACL != 0 {
		if err := unix.Setxattr(p, "system.posix_acl_default", aclXattr(defaultACL, nil), 0); err != nil {
			t.Fatalf("setting a default ACL: %v", err)
		}
	}
	h, _, err := f.Lookup(server, f.Root(), name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
