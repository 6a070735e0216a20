package exports_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/exports"
)

func TestSquashIDs(t *testing.T) {
	type ids struct {
		uid, gid uint32
		gids     []uint32
	}
	cases := []struct {
		mode     exports.SquashMode
		anon     uint32 // anonuid; anongid is anon+1
		in, want ids
	}{
		// root_squash: only id 0 changes, supplementary gid 0 too.
		{exports.RootSquash, 65534, ids{0, 0, []uint32{0, 10}}, ids{65534, 65535, []uint32{65535, 10}}},
		{exports.RootSquash, 65534, ids{1000, 1000, []uint32{10, 20}}, ids{1000, 1000, []uint32{10, 20}}},
		{exports.RootSquash, 65534, ids{1000, 0, []uint32{0}}, ids{1000, 65535, []uint32{65535}}},
		{exports.RootSquash, 65534, ids{0, 100, nil}, ids{65534, 100, nil}},
		{exports.RootSquash, 500, ids{0, 0, []uint32{0, 10}}, ids{500, 501, []uint32{501, 10}}},
		{exports.RootSquash, 500, ids{1000, 1000, []uint32{10}}, ids{1000, 1000, []uint32{10}}},
		// all_squash: everyone, and the supplementary groups are dropped.
		{exports.AllSquash, 65534, ids{0, 0, []uint32{0, 10}}, ids{65534, 65535, nil}},
		{exports.AllSquash, 65534, ids{1000, 1000, []uint32{10, 20}}, ids{65534, 65535, nil}},
		{exports.AllSquash, 500, ids{0, 0, []uint32{0}}, ids{500, 501, nil}},
		{exports.AllSquash, 500, ids{1000, 1000, nil}, ids{500, 501, nil}},
		// no_root_squash: nothing changes.
		{exports.NoRootSquash, 65534, ids{0, 0, []uint32{0, 10}}, ids{0, 0, []uint32{0, 10}}},
		{exports.NoRootSquash, 65534, ids{1000, 1000, []uint32{10}}, ids{1000, 1000, []uint32{10}}},
		{exports.NoRootSquash, 500, ids{0, 0, nil}, ids{0, 0, nil}},
		{exports.NoRootSquash, 500, ids{1000, 1000, nil}, ids{1000, 1000, nil}},
		// Invalid ids (0xffffffff, "unchanged" to chown(2)) are squashed
		// under every mode (defect 1 of issue 11: files owned by root).
		{exports.RootSquash, 65534, ids{0xffffffff, 0xffffffff, []uint32{0xffffffff, 10}}, ids{65534, 65535, []uint32{65535, 10}}},
		{exports.RootSquash, 65534, ids{1000, 0xffffffff, nil}, ids{1000, 65535, nil}},
		{exports.NoRootSquash, 65534, ids{0xffffffff, 0xffffffff, []uint32{0xffffffff}}, ids{65534, 65535, []uint32{65535}}},
		{exports.NoRootSquash, 65534, ids{0xfffffffe, 0, nil}, ids{0xfffffffe, 0, nil}},
		{exports.AllSquash, 65534, ids{0xffffffff, 0xffffffff, nil}, ids{65534, 65535, nil}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/anon=%d/uid=%d/gid=%d", tc.mode, tc.anon, tc.in.uid, tc.in.gid), func(t *testing.T) {
			o := exports.DefaultOptions()
			o.Squash, o.AnonUID, o.AnonGID = tc.mode, tc.anon, tc.anon+1
			in := slices.Clone(tc.in.gids)
			uid, gid, gids := o.SquashIDs(tc.in.uid, tc.in.gid, in)
			if uid != tc.want.uid || gid != tc.want.gid || !slices.Equal(gids, tc.want.gids) {
				t.Errorf("got %d %d %v, want %d %d %v", uid, gid, gids, tc.want.uid, tc.want.gid, tc.want.gids)
			}
			if !slices.Equal(in, tc.in.gids) {
				t.Errorf("the caller's gids were modified: %v", in)
			}
		})
	}
}

// maxid=N squashes every id above N, under each squash mode, and shows
// in String; the parser refuses 0 and 0xffffffff.
func TestSquashMaxID(t *testing.T) {
	tab := mustParse(t, "/a *(maxid=60000)\n/b *(no_root_squash,maxid=60000,anonuid=5,anongid=6)")
	for _, tc := range []struct {
		path         string
		uid, gid     uint32
		gids         []uint32
		wantU, wantG uint32
		wantGIDs     []uint32
	}{
		{"/a", 60000, 60000, []uint32{60000}, 60000, 60000, []uint32{60000}},
		{"/a", 60001, 70000, []uint32{70000, 5}, 65534, 65534, []uint32{65534, 5}},
		{"/a", 0, 0, nil, 65534, 65534, nil},
		{"/b", 0, 0, nil, 0, 0, nil},
		{"/b", 60001, 1, []uint32{1 << 31}, 5, 1, []uint32{6}},
	} {
		o := &tab.Lookup(tc.path).Rules[0].Options
		u, g, gids := o.SquashIDs(tc.uid, tc.gid, tc.gids)
		if u != tc.wantU || g != tc.wantG || !slices.Equal(gids, tc.wantGIDs) {
			t.Errorf("%s: %d:%d %v -> %d:%d %v, want %d:%d %v", tc.path, tc.uid, tc.gid, tc.gids, u, g, gids, tc.wantU, tc.wantG, tc.wantGIDs)
		}
	}
	if s := tab.Lookup("/a").Rules[0].Options.String(); !strings.Contains(s, ",maxid=60000,") {
		t.Errorf("String() = %q, want maxid=60000 in it", s)
	}
	if s := exports.DefaultOptions(); strings.Contains(s.String(), "maxid") {
		t.Errorf("default String() = %q mentions maxid", s.String())
	}
	for _, bad := range []string{"maxid=0", "maxid=4294967295", "maxid=x"} {
		if _, _, err := parse(t, "/a *("+bad+")"); err == nil || !strings.Contains(err.Error(), "maxid") {
			t.Errorf("%s: error %v, want one about maxid", bad, err)
		}
	}
}

// The squash mode and anon ids come from the file.
func TestSquashFromFile(t *testing.T) {
	tab := mustParse(t, "/a *(anonuid=7,anongid=8)\n/b *(all_squash,anonuid=9)\n/c *(no_root_squash)")
	for _, tc := range []struct {
		path         string
		uid, gid     uint32
		wantU, wantG uint32
	}{
		{"/a", 0, 0, 7, 8},
		{"/a", 1000, 1000, 1000, 1000},
		{"/b", 1000, 1000, 9, 65534},
		{"/c", 0, 0, 0, 0},
	} {
		o := &tab.Lookup(tc.path).Rules[0].Options
		u, g, _ := o.SquashIDs(tc.uid, tc.gid, nil)
		if u != tc.wantU || g != tc.wantG {
			t.Errorf("%s: %d:%d -> %d:%d, want %d:%d", tc.path, tc.uid, tc.gid, u, g, tc.wantU, tc.wantG)
		}
	}
}

func TestPortOK(t *testing.T) {
	cases := []struct {
		insecure bool
		tr       exports.Transport
		port     int
		want     bool
	}{
		{false, exports.TCP, 0, true},
		{false, exports.TCP, 700, true},
		{false, exports.TCP, 1023, true},
		{false, exports.TCP, 1024, false},
		{false, exports.TCP, 50000, false},
		{false, exports.TCP, -1, false},
		{false, exports.RDMA, 50000, true},
		{false, exports.RDMA, 0, true},
		{true, exports.TCP, 50000, true},
		{true, exports.TCP, 1023, true},
		{true, exports.RDMA, 50000, true},
	}
	for _, tc := range cases {
		o := exports.DefaultOptions()
		o.Insecure = tc.insecure
		if got := o.PortOK(tc.tr, tc.port); got != tc.want {
			t.Errorf("insecure=%v PortOK(%s, %d) = %v, want %v", tc.insecure, tc.tr, tc.port, got, tc.want)
		}
	}
}

func TestTransportsAndFlavors(t *testing.T) {
	tab := mustParse(t, "/a *\n/b *(transports=rdma,sec=none)\n/c *(transports=tcp,sec=sys:none)")
	cases := []struct {
		path      string
		tcp, rdma bool
		none, sys bool
	}{
		{"/a", true, true, false, true},
		{"/b", false, true, true, false},
		{"/c", true, false, true, true},
	}
	for _, tc := range cases {
		o := &tab.Lookup(tc.path).Rules[0].Options
		got := [4]bool{o.AllowsTransport(exports.TCP), o.AllowsTransport(exports.RDMA),
			o.AllowsFlavor(exports.AuthNone), o.AllowsFlavor(exports.AuthSys)}
		want := [4]bool{tc.tcp, tc.rdma, tc.none, tc.sys}
		if got != want {
			t.Errorf("%s: tcp,rdma,none,sys = %v, want %v", tc.path, got, want)
		}
		if o.AllowsFlavor(6) { // RPCSEC_GSS
			t.Errorf("%s allows RPCSEC_GSS", tc.path)
		}
	}
}

func TestOptionsString(t *testing.T) {
	o := exports.DefaultOptions()
	if got := o.String(); got != def {
		t.Errorf("default options: %s", got)
	}
	o.ReadOnly, o.Async, o.Insecure, o.Squash = false, true, true, exports.AllSquash
	o.AnonUID, o.AnonGID, o.FSID, o.FSIDSet = 1, 2, 3, true
	o.Flavors = []uint32{exports.AuthNone, exports.AuthSys}
	o.Transports = exports.TransportsOf(exports.RDMA)
	o.Backend = exports.BackendMem
	want := "rw,async,insecure,all_squash,anonuid=1,anongid=2,fsid=3,sec=none:sys,transports=rdma,backend=mem"
	if got := o.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if s := exports.AllTransports.String(); s != "tcp:rdma" {
		t.Errorf("AllTransports = %q", s)
	}
}
