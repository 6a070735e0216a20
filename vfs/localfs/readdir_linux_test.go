package localfs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

// The mutation tests run every pattern at 10 and 2,500 entries on every
// filesystem, and at 50,000 on every filesystem the Churn pattern (the
// rm -rf pattern of removing each listed page, with entries removed and
// renamed before they are listed and entries added, all in one listing of
// one filled directory: filling 50,000 files costs 3 to 50 s a pattern
// under go test -race on a 2-core machine, by load) and resuming from an
// old cookie after half the entries went (ResumeOld: on ext4, xfs and
// btrfs the offsets are the file system's own hash or position, on tmpfs
// the name cookies this code implements). ResumeOld at 50,000 costs a
// fill and some 1 s of pattern per filesystem (-race, quiet: ext4 5.2 s,
// xfs 3.7 s, btrfs 4.5 s in all). RemoveUnseen at 50,000 (which Churn
// contains) was dropped for the budget: under -race at load ~24 it took
// 76 s of pattern and 21 s of fill, more than Churn added on the four
// filesystems together; go test -v logs each pattern's times.
var bigPatterns = []string{"Churn", "ResumeOld"}

// needPrivilege skips a test that needs root or a tool, or fails it on CI
// (CI=true), where both are provided (scripts/deps.sh installs the mkfs
// tools; CI runs as root).
func needPrivilege(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", what)
	}
	t.Skip(what)
}

// loopFS makes a filesystem of type typ in an image file and mounts it
// with a loop device, for the duration of the test. It returns the
// mount point.
func loopFS(t *testing.T, typ string, sizeMB int64, mkfsArgs ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		needPrivilege(t, "loop-mounting "+typ+" needs root")
	}
	mkfs, err := exec.LookPath("mkfs." + typ)
	if err != nil {
		needPrivilege(t, "mkfs."+typ+" is not installed (scripts/deps.sh installs it)")
	}
	dir := t.TempDir()
	img := filepath.Join(dir, typ+".img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(sizeMB << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command(mkfs, append(mkfsArgs, img)...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.%s: %v\n%s", typ, err, out)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", typ, "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount %s image: %v\n%s", typ, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	})
	return mnt
}

// runMutations runs the directory-mutation suite on the OS backend with
// export roots in fresh directories under base, after checking the
// filesystem type and the cookie scheme chosen for it.
func runMutations(t *testing.T, base string, magic int64, scheme string, big []string) {
	t.Helper()
	if got := fsType(t, base); got != magic {
		t.Fatalf("%s is filesystem type %#x, want %#x", base, got, magic)
	}
	newFS := func(t *testing.T) vfs.FS {
		dir, err := os.MkdirTemp(base, "mut")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		f := newOS(t, dir, localfs.Options{})
		if got := f.DirCookies(); got != scheme {
			t.Fatalf("cookie scheme %q on %s, want %q", got, base, scheme)
		}
		return f
	}
	vfstest.RunDirMutationTests(t, newFS, 10, 2500)
	vfstest.RunDirMutationPatterns(t, newFS, big, 50000)
}

// tmpfs: d_off is a position on kernels before 6.6, so name cookies.
func TestOSDirMutationTmpfs(t *testing.T) {
	runMutations(t, "/dev/shm", unix.TMPFS_MAGIC, "name", bigPatterns)
}

func TestOSDirMutationExt4(t *testing.T) {
	mnt := loopFS(t, "ext4", 512, "-q", "-F", "-N", "200000")
	runMutations(t, mnt, unix.EXT4_SUPER_MAGIC, "offset", bigPatterns)
}

// Name cookies on a filesystem that would not need them (the host's
// temporary directory, usually ext4): the scheme does not depend on
// what the offsets are.
func TestOSDirMutationNameCookies(t *testing.T) {
	base := t.TempDir()
	vfstest.RunDirMutationTests(t, func(t *testing.T) vfs.FS {
		dir, err := os.MkdirTemp(base, "mut")
		if err != nil {
			t.Fatal(err)
		}
		f := newOS(t, dir, localfs.Options{NameCookies: true})
		if got := f.DirCookies(); got != "name" {
			t.Fatalf("cookie scheme %q with NameCookies, want name", got)
		}
		return f
	}, 10, 2500)
}

func TestOSDirMutationXFS(t *testing.T) {
	mnt := loopFS(t, "xfs", 512, "-q", "-f")
	runMutations(t, mnt, unix.XFS_SUPER_MAGIC, "offset", bigPatterns)
}

func TestOSDirMutationBtrfs(t *testing.T) {
	mnt := loopFS(t, "btrfs", 512, "-q", "-f")
	runMutations(t, mnt, unix.BTRFS_SUPER_MAGIC, "offset", bigPatterns)
}

// The verifier is zero for the scheme a filesystem gets by default (as
// knfsd's: the Linux client keeps its directory cache then) and nonzero
// for name cookies forced on a filesystem of stable offsets, so the
// default scheme refuses the forced scheme's cookies.
func TestOSCookieVerifierPerScheme(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "verf")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	for _, dir := range []string{t.TempDir(), shm} {
		t.Run(filepath.Base(dir), func(t *testing.T) { testCookieVerifier(t, dir) })
	}
}

func testCookieVerifier(t *testing.T, dir string) {
	key := []byte(strings.Repeat("k", 32))
	a := newOS(t, dir, localfs.Options{HandleKey: key})
	b := newOS(t, dir, localfs.Options{HandleKey: key, NameCookies: true})
	c := newOS(t, dir, localfs.Options{HandleKey: key})
	_, va, _, err := a.ReadDir(a.Root(), 0, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	_, vb, _, err := b.ReadDir(b.Root(), 0, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	_, vc, _, err := c.ReadDir(c.Root(), 0, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if va != 0 || vc != 0 {
		t.Errorf("verifiers of the default scheme: %#x, again %#x; want 0", va, vc)
	}
	if a.DirCookies() == b.DirCookies() {
		// dir is on a filesystem that gets name cookies anyway.
		if vb != 0 {
			t.Errorf("name cookies on %s by default, verifier %#x; want 0", a.DirCookies(), vb)
		}
		return
	}
	if vb == 0 {
		t.Errorf("forced name cookies: verifier 0")
	}
	if va == vb {
		t.Errorf("verifiers: offsets %#x, names %#x, offsets again %#x", va, vb, vc)
	}
	if _, _, _, err := a.ReadDir(a.Root(), 2, vb, 10); err != vfs.ErrBadCookie {
		t.Errorf("offset-cookie export took a forced name-cookie verifier: %v", err)
	}
}
