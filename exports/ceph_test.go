package exports_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/exports"
)

// files is a StatFile that knows only the given files.
func files(names ...string) func(string) error {
	return func(p string) error {
		if slices.Contains(names, p) {
			return nil
		}
		return os.ErrNotExist
	}
}

func parseCeph(in string, avail func(string) error) (*exports.Table, error) {
	tab, _, err := exports.Parse("exports", strings.NewReader(in), exports.ParseOptions{
		Resolver:         testResolver(),
		StatDir:          dirs("/srv"),
		StatFile:         files("/etc/ceph/ceph.conf", "/etc/ceph/nfs.keyring", "/etc/gonfsrdma/fhkey"),
		BackendAvailable: avail,
	})
	return tab, err
}

func TestParseCephFS(t *testing.T) {
	tab, err := parseCeph("/ceph -backend=cephfs,ceph_conf=/etc/ceph/ceph.conf,ceph_name=nfs,ceph_keyring=/etc/ceph/nfs.keyring,"+
		"ceph_fs=cephfs,ceph_path=/volumes/data,ceph_fhkey=/etc/gonfsrdma/fhkey,fsid=9 192.0.2.1(rw) 192.0.2.2", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := tab.Lookup("/ceph")
	if e == nil || len(e.Rules) != 2 {
		t.Fatalf("export %+v", e)
	}
	want := exports.CephOptions{Conf: "/etc/ceph/ceph.conf", Name: "nfs", Keyring: "/etc/ceph/nfs.keyring", FS: "cephfs",
		Path: "/volumes/data", FHKey: "/etc/gonfsrdma/fhkey"}
	for _, r := range e.Rules {
		if r.Options.Backend != exports.BackendCephFS || r.Options.Ceph != want {
			t.Errorf("rule %s: backend %q ceph %+v", r.Spec, r.Options.Backend, r.Options.Ceph)
		}
	}
	s := e.Rules[0].Options.String()
	if !strings.HasSuffix(s, ",backend=cephfs,ceph_conf=/etc/ceph/ceph.conf,ceph_name=nfs,ceph_keyring=/etc/ceph/nfs.keyring,"+
		"ceph_fs=cephfs,ceph_path=/volumes/data,ceph_fhkey=/etc/gonfsrdma/fhkey") {
		t.Errorf("String() = %q", s)
	}
	// No directory is needed for the path, and no ceph_* option is
	// required.
	if _, err := parseCeph("/anything -backend=cephfs *", nil); err != nil {
		t.Errorf("bare backend=cephfs: %v", err)
	}
}

func TestParseCephFSErrors(t *testing.T) {
	notBuilt := errors.New("built without CephFS: use make build-ceph")
	avail := func(b string) error {
		if b == exports.BackendCephFS {
			return notBuilt
		}
		return nil
	}
	for _, tc := range []struct {
		name, in string
		avail    func(string) error
		want     string
	}{
		{"relative path", "/c *(backend=cephfs,ceph_path=vol)", nil,
			`exports:1:31: ceph_path wants a clean absolute path inside the file system, not "vol" (e.g. ceph_path=/volumes/data)`},
		{"unclean path", "/c *(backend=cephfs,ceph_path=/a/../b)", nil,
			`exports:1:31: ceph_path wants a clean absolute path inside the file system, not "/a/../b" (e.g. ceph_path=/volumes/data)`},
		{"client prefix", "/c *(backend=cephfs,ceph_name=client.nfs)", nil,
			`exports:1:31: ceph_name is the client name without "client." (e.g. ceph_name=nfs for client.nfs)`},
		{"bad fs name", "/c *(backend=cephfs,ceph_fs=a/b)", nil,
			`exports:1:29: invalid ceph_fs "a/b" (letters, digits, '.', '_' and '-')`},
		{"relative conf", "/c *(backend=cephfs,ceph_conf=ceph.conf)", nil,
			`exports:1:31: ceph_conf wants an absolute file name, not "ceph.conf" (e.g. ceph_conf=/etc/ceph/ceph.conf)`},
		{"missing file", "/c *(backend=cephfs,ceph_keyring=/etc/ceph/none.keyring)", nil,
			`exports:1:1: ceph_keyring=/etc/ceph/none.keyring: file does not exist`},
		{"without backend", "/srv *(ceph_path=/x)", nil,
			`exports:1:1: ceph_path=/x: ceph_* options need backend=cephfs (add backend=cephfs, or remove them)`},
		{"clients disagree", "/c -backend=cephfs 192.0.2.1(ceph_path=/a) 192.0.2.2(ceph_path=/b)", nil,
			`exports:1:44: client "192.0.2.2" has "ceph_path=/b" but client "192.0.2.1" has "ceph_path=/a"; one export has one CephFS directory (set the ceph_* options once, in the default options after the path)`},
		{"not compiled in", "/c *(backend=cephfs)", avail,
			`exports:1:1: backend=cephfs: built without CephFS: use make build-ceph`},
		{"needs a value", "/c *(backend=cephfs,ceph_fs)", nil,
			`exports:1:21: option "ceph_fs" needs a value (e.g. "ceph_fs=cephfs")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCeph(tc.in, tc.avail)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error:\ngot  %v\nwant %s", err, tc.want)
			}
		})
	}
}
