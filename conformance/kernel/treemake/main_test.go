package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// walkCount counts what is below dir (dir itself not included) and the
// depth of its deepest directory.
func walkCount(t *testing.T, dir string) (entries, dirs, deepest int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		entries++
		if d.IsDir() {
			dirs++
			if n := strings.Count(strings.TrimPrefix(p, dir), string(os.PathSeparator)); n > deepest {
				deepest = n
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return
}

func TestFlat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "flat")
	if rc := run([]string{"flat", dir, "1000", "8"}); rc != 0 {
		t.Fatalf("run: exit %d", rc)
	}
	n, d, _ := walkCount(t, dir)
	if n != 1000 || d != 0 {
		t.Fatalf("flat 1000: %d entries, %d directories below the top", n, d)
	}
	for _, i := range []int{0, 999} {
		name := FlatName(i)
		if len(name) != 197 {
			t.Fatalf("name %d is %d bytes, want 197", i, len(name))
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	// an existing top directory is an error, not a merge
	if rc := run([]string{"flat", dir, "10", "2"}); rc != 1 {
		t.Fatalf("flat into an existing directory: exit %d, want 1", rc)
	}
}

func TestTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	// 12 levels of 3 directories, 5 files in each of the 37 directories
	if rc := run([]string{"tree", dir, "12", "3", "5", "4"}); rc != 0 {
		t.Fatalf("run: exit %d", rc)
	}
	n, d, deepest := walkCount(t, dir)
	if d != 36 || n != 36+37*5 || deepest != 12 {
		t.Fatalf("tree 12x3x5: %d entries, %d directories, deepest %d; want %d, 36, 12", n, d, deepest, 36+37*5)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"flat", "x", "0", "1"}, {"flat", "x", "1"}, {"tree", "x", "201", "1", "1", "1"}, {"tree", "x", "1", "1", "1", "z"}, {"other"}} {
		if rc := run(args); rc != 2 {
			t.Errorf("%q: exit %d, want 2", args, rc)
		}
	}
}
