// Package exporttest makes what the tests of an in-process server export:
// a directory of an exact mode and an exports(5) file, each in a
// temporary directory of the test, removed when it ends.
package exporttest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir makes the directory "export" in a temporary directory of t with
// exactly mode (the umask does not apply) and returns its path.
func Dir(t testing.TB, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // beat the umask
		t.Fatal(err)
	}
	return dir
}

// File writes text to the file "exports" in a temporary directory of t
// and returns its path.
func File(t testing.TB, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "exports")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
