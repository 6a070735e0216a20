package nfsclient_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-billy/v5"
	billytest "github.com/go-git/go-billy/v5/test"
	"github.com/go-git/go-billy/v5/util"
	check "gopkg.in/check.v1"

	"github.com/gonfsrdma/gonfsrdma/nfsclient"
)

// The go-billy project's own test suite (github.com/go-git/go-billy/v5/test)
// against the billy view of a mounted export, over TCP and over RDMA on
// the software fabric. Each test gets a fresh directory of the export,
// through go-billy's chroot helper.

type billySuite struct {
	billytest.FilesystemSuite
	fs  billy.Filesystem
	dir string
	n   int
}

func (s *billySuite) SetUpTest(c *check.C) {
	s.n++
	name := fmt.Sprintf("t%03d", s.n)
	c.Assert(os.Mkdir(filepath.Join(s.dir, name), 0o777), check.IsNil)
	c.Assert(os.Chmod(filepath.Join(s.dir, name), 0o777), check.IsNil)
	sub, err := s.fs.Chroot(name)
	c.Assert(err, check.IsNil)
	s.FilesystemSuite = billytest.NewFilesystemSuite(sub)
}

func TestBillySuite(t *testing.T) {
	forEachProto(t, "bs=64K", func(t *testing.T, _ string, s *server, f *nfsclient.FS) {
		suite := &billySuite{fs: f.Billy(), dir: s.dir}
		res := check.Run(suite, &check.RunConf{Output: testWriter{t}, Verbose: testing.Verbose()})
		if !res.Passed() {
			t.Fatalf("go-billy suite: %v", res)
		}
		if res.Succeeded == 0 {
			t.Fatal("the go-billy suite ran no test")
		}
		t.Logf("go-billy suite: %v", res)
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// TestTempFileMany and TestTempFileManyWithUtil replace the upstream
// cases of the same name, which create and remove 102,400 files each
// (about a minute apiece over loopback, several under -race): the same
// checks, that 100 open temporary files at a time get distinct names and
// each can be closed and removed, over 20 rounds instead of 1,024.
func (s *billySuite) TestTempFileMany(c *check.C) { s.tempFileMany(c, s.FS.TempFile) }

func (s *billySuite) TestTempFileManyWithUtil(c *check.C) {
	s.tempFileMany(c, func(dir, prefix string) (billy.File, error) { return util.TempFile(s.FS, dir, prefix) })
}

func (s *billySuite) tempFileMany(c *check.C, temp func(dir, prefix string) (billy.File, error)) {
	for i := 0; i < 20; i++ {
		var files []billy.File
		seen := map[string]bool{}
		for j := 0; j < 100; j++ {
			f, err := temp("test-dir", "test-prefix")
			c.Assert(err, check.IsNil)
			c.Assert(seen[f.Name()], check.Equals, false)
			seen[f.Name()] = true
			files = append(files, f)
		}
		for _, f := range files {
			c.Assert(f.Close(), check.IsNil)
			c.Assert(s.FS.Remove(f.Name()), check.IsNil)
		}
	}
}
