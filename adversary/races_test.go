package adversary

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// raceIterations bounds each racing loop; issue 11 saw the MKDIR/RENAME
// race win about 1 in 20 tries.
const raceIterations = 300

// race runs a and b, each raceIterations times on its own connection as
// uid 1000, at the same time, and fails on a broken connection. The
// calls' answers are theirs to judge; the disk is judged afterwards.
func race(t *testing.T, e *env, a, b func(c *Conn, i int) error) {
	t.Helper()
	ca, cb := e.dial(attackerIP, Sys(userUID, userGID)), e.dial(attackerIP, Sys(userUID, userGID))
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k, run := range []struct {
		c *Conn
		f func(c *Conn, i int) error
	}{{ca, a}, {cb, b}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < raceIterations; i++ {
				if err := run.f(run.c, i); err != nil {
					errs[k] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("a racing client's connection failed: %v", err)
		}
	}
}

// findIno returns the names in dir whose inode is ino.
func findIno(t *testing.T, dir string, ino uint64) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, de := range ents {
		if lstat(t, filepath.Join(dir, de.Name())).ino == ino {
			names = append(names, de.Name())
		}
	}
	return names
}

// TestRaces runs two uid-1000 clients against each other in a
// world-writable directory holding a root-owned object, and checks on
// disk that the root-owned object is still root's, with its mode, links
// and data: creation by name must not hand over whatever the name means
// a moment later.
func TestRaces(t *testing.T) {
	e := newEnv(t, nil)
	x := &raceEnv{env: e, exportRoot: e.root(e.exp), admin: e.dial(attackerIP, Sys(0, 0)), keep: filepath.Join(e.base, "keep")}
	must(t, os.Mkdir(x.keep, 0o700))
	runAttacks(t, x, raceAttacks)
}

// raceEnv is env with the rw root_squash export's root handle, a root
// connection to look handles up, and keep, a root-only directory outside
// every export.
type raceEnv struct {
	*env
	exportRoot []byte
	admin      *Conn
	keep       string
}

// CREATE (UNCHECKED, mode 0666) and REMOVE "f" against RENAME
// victim<->f, where victim is a root:root 0644 file; a second link
// outside the export keeps the inode to judge.
func raceCreateRename(t *testing.T, e *raceEnv) {
	fh, held := heldVictimDir(t, e, "r2", "r2-victim")
	race(t, e.env, func(c *Conn, i int) error {
		if _, _, err := c.Create(fh, "f", Unchecked, Mode(0o666)); err != nil {
			return err
		}
		_, err := c.Remove(fh, "f")
		return err
	}, swapNames(fh, "victim", "f"))
	checkHeldVictim(t, held, "CREATE")
	if b, _ := os.ReadFile(held); string(b) != "victim data" {
		t.Errorf("the root-owned file now holds %q", b)
	}
}

// swapNames is a racer that renames from to to in dir and back.
func swapNames(dir []byte, from, to string) func(c *Conn, i int) error {
	return func(c *Conn, i int) error {
		if _, err := c.Rename(dir, from, dir, to); err != nil {
			return err
		}
		_, err := c.Rename(dir, to, dir, from)
		return err
	}
}

// heldVictimDir makes the root-owned directory name (mode 0777) at the
// export's top with "victim" in it, a root:root 0644 file holding "victim
// data", and a second link to it, keep, outside the export that holds the
// inode to judge. It returns the directory's handle and the held link's
// path.
func heldVictimDir(t *testing.T, e *raceEnv, name, keep string) (fh []byte, held string) {
	t.Helper()
	dir := filepath.Join(e.exp, name)
	mkdirOwned(t, dir, 0, 0, 0o777)
	victim := filepath.Join(dir, "victim")
	writeFile(t, victim, "victim data", 0, 0, 0o644)
	held = filepath.Join(e.keep, keep)
	must(t, os.Link(victim, held))
	return lookupPath(t, e.admin, e.exportRoot, name), held
}

// checkHeldVictim fails the test unless the held victim of
// heldVictimDir is still root:root 0644 after the op/RENAME races.
func checkHeldVictim(t *testing.T, held, op string) {
	t.Helper()
	if got := lstat(t, held); got.uid != 0 || got.gid != 0 || got.mode != 0o644 {
		t.Errorf("after %d %s/RENAME races the root:root 0644 file is %v", raceIterations, op, got)
	}
}

// raceAttacks are the subtests of TestRaces, in order.
var raceAttacks = []attack[*raceEnv]{
	{"mkdir-rename", raceMkdirRename},
	{"create-rename", raceCreateRename},
	{"remove-link", raceRemoveLink},
	{"symlink-mknod-rename", raceSymlinkMknodRename},
	{"symlink-swap", raceSymlinkSwap},
}

func raceMkdirRename(t *testing.T, e *raceEnv) {
	dir := filepath.Join(e.exp, "r1")
	mkdirOwned(t, dir, 0, 0, 0o777)
	victim := filepath.Join(dir, "victim")
	mkdirOwned(t, victim, 0, 0, 0o755)
	writeFile(t, filepath.Join(victim, "keepme"), "x", 0, 0, 0o644)
	ino := lstat(t, victim).ino
	fh := lookupPath(t, e.admin, e.exportRoot, "r1")
	race(t, e.env, func(c *Conn, i int) error {
		if _, _, err := c.Mkdir(fh, "d", Mode(0o777)); err != nil {
			return err
		}
		_, err := c.Rmdir(fh, "d")
		return err
	}, swapNames(fh, "victim", "d"))
	names := findIno(t, dir, ino)
	if len(names) != 1 {
		t.Fatalf("the victim directory is now at %v", names)
	}
	if got := lstat(t, filepath.Join(dir, names[0])); got.uid != 0 || got.gid != 0 || got.mode != 0o755 {
		t.Errorf("after %d MKDIR/RENAME races the root:root 0755 directory is %v", raceIterations, got)
	}
}

// LINK of a root:root 0600 file (fs.protected_hardlinks refuses it to
// uid 1000) and REMOVE of the link, against CREATE/REMOVE of the same
// name and REMOVE of the file, in a sticky directory.
func raceRemoveLink(t *testing.T, e *raceEnv) {
	dir := filepath.Join(e.exp, "r3")
	mkdirOwned(t, dir, 0, 0, 0o1777)
	victim := filepath.Join(dir, "secret")
	writeFile(t, victim, "root secret", 0, 0, 0o600)
	ino := lstat(t, victim).ino
	fh := lookupPath(t, e.admin, e.exportRoot, "r3")
	sfh := lookupPath(t, e.admin, e.exportRoot, "r3/secret")
	var linked int
	race(t, e.env, func(c *Conn, i int) error {
		st, err := c.Link(sfh, fh, "l")
		if err != nil {
			return err
		}
		if st == OK {
			linked++
		}
		_, err = c.Remove(fh, "l")
		return err
	}, func(c *Conn, i int) error {
		if _, _, err := c.Create(fh, "l", Guarded, Mode(0o644)); err != nil {
			return err
		}
		if _, err := c.Remove(fh, "l"); err != nil {
			return err
		}
		_, err := c.Remove(fh, "secret")
		return err
	})
	if linked > 0 {
		t.Errorf("uid %d hard-linked a root:root 0600 file %d times in %d tries", userUID, linked, raceIterations)
	}
	got := lstat(t, victim)
	if got.ino != ino || got.nlink != 1 || got.uid != 0 || got.mode != 0o600 {
		t.Errorf("the root secret is now %v (was ino %d, nlink 1)", got, ino)
	}
	if names := findIno(t, dir, ino); len(names) != 1 {
		t.Errorf("names of the root secret: %v", names)
	}
	if b, _ := os.ReadFile(victim); string(b) != "root secret" {
		t.Errorf("the root secret now holds %q", b)
	}
}

// SYMLINK and MKNOD (a FIFO) of "f" and its REMOVE against RENAME
// victim<->f, where victim is a root:root 0644 file held by a second
// link outside the export: creating by name must not chown or chmod
// what the name means a moment later.
func raceSymlinkMknodRename(t *testing.T, e *raceEnv) {
	for _, op := range []struct {
		name string
		do   func(c *Conn, dir []byte) error
	}{
		{"symlink", func(c *Conn, dir []byte) error {
			_, _, err := c.Symlink(dir, "f", "target", Sattr{SetMode: true, Mode: 0o777})
			return err
		}},
		{"mknod", func(c *Conn, dir []byte) error {
			_, _, err := c.MknodFIFO(dir, "f", Mode(0o666))
			return err
		}},
	} {
		t.Run(op.name, func(t *testing.T) {
			fh, held := heldVictimDir(t, e, "r4-"+op.name, "r4-"+op.name)
			race(t, e.env, func(c *Conn, i int) error {
				if err := op.do(c, fh); err != nil {
					return err
				}
				_, err := c.Remove(fh, "f")
				return err
			}, swapNames(fh, "victim", "f"))
			checkHeldVictim(t, held, op.name)
		})
	}
}

// One client swaps a directory for a symbolic link to the outside and
// back by RENAME; the other looks the name up and creates in whatever it
// got. No file may appear outside the export.
func raceSymlinkSwap(t *testing.T, e *raceEnv) {
	dir := filepath.Join(e.exp, "r5")
	mkdirOwned(t, dir, 0, 0, 0o777)
	outside := filepath.Join(e.base, "r5-outside")
	mkdirOwned(t, outside, 0, 0, 0o777)
	fh := lookupPath(t, e.admin, e.exportRoot, "r5")
	var created, refusedCreates int
	mkdirOwned(t, filepath.Join(dir, "sub"), userUID, userGID, 0o777)
	must(t, os.Symlink(outside, filepath.Join(dir, "l")))
	race(t, e.env, func(c *Conn, i int) error {
		// "sub" is the directory, then gone, then the link, then gone.
		for _, mv := range [][2]string{{"sub", "d"}, {"l", "sub"}, {"sub", "l"}, {"d", "sub"}} {
			if _, err := c.Rename(fh, mv[0], fh, mv[1]); err != nil {
				return err
			}
		}
		return nil
	}, func(c *Conn, i int) error {
		sub, _, st, err := c.Lookup(fh, "sub")
		if err != nil || st != OK {
			return err
		}
		_, st, err = c.Create(sub, "planted", Unchecked, Mode(0o644))
		if err == nil && st == OK {
			created++
			_, err = c.Remove(sub, "planted")
		} else if err == nil {
			refusedCreates++
		}
		return err
	})
	t.Logf("CREATE in what LOOKUP of the swapped name gave: %d made inside the export, %d refused, of %d tries", created, refusedCreates, raceIterations)
	ents, err := os.ReadDir(outside)
	must(t, err)
	if len(ents) > 0 {
		t.Errorf("after %d swaps of a directory and a symlink to outside, outside holds %d entries (%d creates succeeded)", raceIterations, len(ents), created)
	}
}
