package exports_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/exports"
)

// def is the effective option list of a client given no options.
const def = "ro,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os"

// rules renders a table as "path spec(options)" per rule, plus
// " ignored=a,b" when options were ignored.
func rules(tab *exports.Table) []string {
	var out []string
	for _, e := range tab.Exports {
		for _, r := range e.Rules {
			s := e.Path + " " + r.Spec + "(" + r.Options.String() + ")"
			if len(r.Options.Ignored) > 0 {
				s += " ignored=" + strings.Join(r.Options.Ignored, ",")
			}
			out = append(out, s)
		}
	}
	return out
}

// validCases are also the fuzzer's seeds.
var validCases = []struct {
	name string
	in   string
	want []string
}{
	{"star defaults", "/srv *\n", []string{"/srv *(" + def + ")"}},
	{"bare address", "/srv 192.0.2.1", []string{"/srv 192.0.2.1(" + def + ")"}},
	{"empty option list", "/srv 192.0.2.1()", []string{"/srv 192.0.2.1(" + def + ")"}},
	{"cidr rw async insecure fsid", "/srv/data 10.0.0.0/8(rw,async,insecure,fsid=1)",
		[]string{"/srv/data 10.0.0.0/8(rw,async,insecure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os)"}},
	{"later option wins", "/srv *(rw,ro,async,sync,insecure,secure)", []string{"/srv *(" + def + ")"}},
	{"no_root_squash", "/srv *(no_root_squash)",
		[]string{"/srv *(ro,sync,secure,no_root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)"}},
	{"all_squash anon ids", "/srv *(all_squash,anonuid=1000,anongid=100)",
		[]string{"/srv *(ro,sync,secure,all_squash,anonuid=1000,anongid=100,sec=sys,transports=tcp:rdma,backend=os)"}},
	{"all_squash beats no_root_squash", "/srv *(all_squash,no_root_squash)",
		[]string{"/srv *(ro,sync,secure,all_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)"}},
	{"no_all_squash restores", "/srv *(no_root_squash,all_squash,no_all_squash)",
		[]string{"/srv *(ro,sync,secure,no_root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)"}},
	{"fsid root", "/srv *(fsid=root)",
		[]string{"/srv *(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=0,sec=sys,transports=tcp:rdma,backend=os)"}},
	{"fsid max", "/srv *(fsid=4294967295)",
		[]string{"/srv *(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=4294967295,sec=sys,transports=tcp:rdma,backend=os)"}},
	{"sec list keeps order and dedupes", "/srv *(sec=none:sys:none)",
		[]string{"/srv *(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=none:sys,transports=tcp:rdma,backend=os)"}},
	{"sec none", "/srv *(sec=none)",
		[]string{"/srv *(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=none,transports=tcp:rdma,backend=os)"}},
	{"transports rdma", "/srv *(transports=rdma)",
		[]string{"/srv *(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=rdma,backend=os)"}},
	{"transports tcp", "/srv *(transports=tcp)",
		[]string{"/srv *(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp,backend=os)"}},
	{"transports both any order", "/srv *(transports=rdma:tcp)", []string{"/srv *(" + def + ")"}},
	{"backend mem", "/mem *(backend=mem)",
		[]string{"/mem *(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=mem)"}},
	{"ignored knfsd options", "/srv *(no_subtree_check,rw,wdelay,no_subtree_check,crossmnt,insecure_locks)",
		[]string{"/srv *(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os) ignored=no_subtree_check,wdelay,crossmnt,insecure_locks"}},
	{"default option list", "/srv -rw,insecure 192.0.2.1(ro) 192.0.2.2 192.0.2.3(all_squash)", []string{
		"/srv 192.0.2.1(ro,sync,insecure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
		"/srv 192.0.2.2(rw,sync,insecure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
		"/srv 192.0.2.3(rw,sync,insecure,all_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
	}},
	{"default backend mem", "/m -backend=mem,fsid=7 192.0.2.1(rw) 192.0.2.2", []string{
		"/m 192.0.2.1(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=7,sec=sys,transports=tcp:rdma,backend=mem)",
		"/m 192.0.2.2(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=7,sec=sys,transports=tcp:rdma,backend=mem)",
	}},
	{"ipv6 address and prefix", "/srv ::1(rw) fd00::/64 2001:db8::/ffff:ffff::", []string{
		"/srv ::1(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
		"/srv fd00::/64(" + def + ")",
		"/srv 2001:db8::/ffff:ffff::(" + def + ")",
	}},
	{"netmask", "/srv 10.1.0.0/255.255.0.0(rw)",
		[]string{"/srv 10.1.0.0/255.255.0.0(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)"}},
	{"host names and wildcards", "/srv alpha.lab.example(rw) *.lab.example node?.hpc.example", []string{
		"/srv alpha.lab.example(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
		"/srv *.lab.example(" + def + ")",
		"/srv node?.hpc.example(" + def + ")",
	}},
	{"quoted path", `"/srv/my data" *`, []string{"/srv/my data *(" + def + ")"}},
	{"quotes inside the path", `/srv/"my data"/x *`, []string{"/srv/my data/x *(" + def + ")"}},
	{"octal escape", `/srv/my\040data *`, []string{"/srv/my data *(" + def + ")"}},
	{"hash inside a path", "/srv/a#b *", []string{"/srv/a#b *(" + def + ")"}},
	{"path cleaned", "/srv//data/../data/ *", []string{"/srv/data *(" + def + ")"}},
	{"root path", "/ *", []string{"/ *(" + def + ")"}},
	{"comments and blank lines", "# header\n\n   # indented\n/srv *(rw) # trailing (ro)\n/b * # tight\n/c 192.0.2.1(ro)#after paren\n", []string{
		"/srv *(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
		"/b *(" + def + ")",
		"/c 192.0.2.1(" + def + ")",
	}},
	{"continuation lines", "/srv \\\n  192.0.2.1(rw) \\  \n\t192.0.2.2 \\ # note\n  192.0.2.3\n/next *\n", []string{
		"/srv 192.0.2.1(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
		"/srv 192.0.2.2(" + def + ")",
		"/srv 192.0.2.3(" + def + ")",
		"/next *(" + def + ")",
	}},
	{"continuation joins tokens apart", "/srv 192.0.2.1\\\n192.0.2.2", []string{
		"/srv 192.0.2.1(" + def + ")",
		"/srv 192.0.2.2(" + def + ")",
	}},
	{"continuation at end of file", "/srv * \\", []string{"/srv *(" + def + ")"}},
	{"CRLF", "/a *(rw)\r\n/b *\r\n", []string{
		"/a *(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
		"/b *(" + def + ")",
	}},
	{"tabs", "\t/srv\t192.0.2.1(rw)\t*", []string{
		"/srv 192.0.2.1(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
		"/srv *(" + def + ")",
	}},
	{"no client exports to everyone", "/srv", []string{"/srv *(" + def + ")"}},
	{"defaults and no client", "/srv -rw", []string{"/srv *(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)"}},
	{"options with no client", "/srv 192.0.2.1 (rw)", []string{
		"/srv 192.0.2.1(" + def + ")",
		"/srv *(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
	}},
	{"host bits masked", "/srv 10.1.2.3/8", []string{"/srv 10.1.2.3/8(" + def + ")"}},
	{"ipv4-mapped prefix", "/srv ::ffff:10.0.0.0/104", []string{"/srv ::ffff:10.0.0.0/104(" + def + ")"}},
	{"unresolvable host is kept", "/srv nosuch.example(rw) *", []string{
		"/srv nosuch.example(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,sec=sys,transports=tcp:rdma,backend=os)",
		"/srv *(" + def + ")",
	}},
	{"two exports, distinct fsids", "/a *(fsid=1)\n/b *(fsid=2)\n/c *\n", []string{
		"/a *(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os)",
		"/b *(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=2,sec=sys,transports=tcp:rdma,backend=os)",
		"/c *(" + def + ")",
	}},
	{"empty file", "", nil},
	{"only comments", "# nothing\n#/srv *\n", nil},
}

func TestParseValid(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			tab := mustParse(t, tc.in)
			if got := rules(tab); !slices.Equal(got, tc.want) {
				t.Errorf("rules:\ngot  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestParsePositions(t *testing.T) {
	in := "# c\n/srv/a \\\n   192.0.2.1(rw) \\\n\t*\n  /srv/b   ::1\n"
	tab := mustParse(t, in)
	a, b := tab.Lookup("/srv/a"), tab.Lookup("/srv/b")
	if a == nil || b == nil {
		t.Fatal("missing export")
	}
	check := func(what string, got exports.Pos, line, col int) {
		t.Helper()
		if got.File != "exports" || got.Line != line || got.Col != col {
			t.Errorf("%s at %v, want exports:%d:%d", what, got, line, col)
		}
	}
	check("/srv/a", a.Pos, 2, 1)
	check("192.0.2.1", a.Rules[0].Pos, 3, 4)
	check("*", a.Rules[1].Pos, 4, 2)
	check("/srv/b", b.Pos, 5, 3)
	check("::1", b.Rules[0].Pos, 5, 12)
	if s := a.Pos.String(); s != "exports:2:1" {
		t.Errorf("Pos.String() = %q", s)
	}
}

func TestParseWarnings(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
	}{
		{"unresolvable host", "/srv nosuch.example(rw)", []string{
			`exports:1:6: warning: cannot resolve host "nosuch.example": no such host (the rule matches no client until the file is reloaded)`}},
		{"options with no client", "/srv 192.0.2.1 (rw)", []string{
			`exports:1:16: warning: options with no client apply to every host (write "*(rw)" to export to everyone, or remove the space before "(" if the options were meant for the client before)`}},
		{"no client", "/srv", []string{
			`exports:1:1: warning: no client given: /srv is exported to every host (write "*(...)" to export to everyone on purpose)`}},
		{"host bits", "/srv 10.1.2.3/8", []string{
			`exports:1:6: warning: 10.1.2.3/8 has host bits set; it means 10.0.0.0/8 (write 10.0.0.0/8)`}},
		{"duplicate client", "/srv 192.0.2.1(rw) 192.0.2.1(ro)", []string{
			`exports:1:20: warning: client "192.0.2.1" is listed twice; the one at column 6 wins`}},
		{"same network written twice", "/srv 10.0.0.0/8 10.0.0.0/255.0.0.0", []string{
			`exports:1:17: warning: client "10.0.0.0/255.0.0.0" is listed twice; the one at column 6 wins`}},
		{"after star", "/srv *(ro) 192.0.2.1(rw)", []string{
			`exports:1:12: warning: client "192.0.2.1" is never used: "*" at column 6 matches every client first`}},
		{"clean", "/srv 192.0.2.1(rw) *", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, warns, err := parse(t, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range warns {
				got = append(got, w.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("warnings:\ngot  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// errorCases are also fuzzer seeds.
var errorCases = []struct {
	name, in string
	want     string // the whole ErrorList text
}{
	{"unknown option with hint", "# exports\n\n/srv/data  *(ro,rw2)",
		`exports:3:17: unknown option "rw2" (did you mean "rw"?)`},
	{"unknown option far from all", "/srv *(frobnicate)", `exports:1:8: unknown option "frobnicate"`},
	{"unsupported knfsd option", "/srv *(mp)", `exports:1:8: option "mp" is not supported by this server`},
	{"flag with value", "/srv *(rw=1)", `exports:1:8: option "rw" takes no value`},
	{"ignored option with value", "/srv *(wdelay=1)", `exports:1:8: option "wdelay" takes no value`},
	{"value missing", "/srv *(anonuid)", `exports:1:8: option "anonuid" needs a value (e.g. "anonuid=65534")`},
	{"empty option", "/srv *(rw,,sync)", `exports:1:11: empty option`},
	{"trailing comma", "/srv *(rw,)", `exports:1:11: empty option`},
	{"anonuid not a number", "/srv *(anonuid=abc)", `exports:1:16: invalid anonuid "abc" (want a number from 0 to 4294967294)`},
	{"anongid negative", "/srv *(anongid=-2)", `exports:1:16: invalid anongid "-2" (want a number from 0 to 4294967294)`},
	{"anonuid -1 as unsigned", "/srv *(anonuid=4294967295)", `exports:1:16: invalid anonuid "4294967295" (want a number from 0 to 4294967294)`},
	{"anonuid too large", "/srv *(anonuid=4294967296)", `exports:1:16: invalid anonuid "4294967296" (want a number from 0 to 4294967294)`},
	{"fsid uuid", "/srv *(fsid=7e6c1b4a-2c3d-4e5f-8a9b-0c1d2e3f4a5b)", `exports:1:13: fsid UUIDs are not supported (use a number, e.g. fsid=1)`},
	{"fsid uuid plain hex", "/srv *(fsid=0123456789abcdef0123456789abcdef)", `exports:1:13: fsid UUIDs are not supported (use a number, e.g. fsid=1)`},
	{"fsid bad", "/srv *(fsid=one)", `exports:1:13: invalid fsid "one" (want a number from 0 to 4294967295, or root)`},
	{"sec krb5", "/srv *(sec=krb5p)", `exports:1:12: sec=krb5p is not supported (only sys and none are supported)`},
	{"sec typo", "/srv *(sec=sys:nnoe)", `exports:1:16: unknown security flavor "nnoe" (did you mean "none"?)`},
	{"sec comma", "/srv *(sec=sys,none)", `exports:1:16: unknown option "none" (separate sec values with ":", e.g. "sec=sys:none")`},
	{"transports comma", "/srv *(transports=tcp,rdma)", `exports:1:23: unknown option "rdma" (separate transports values with ":", e.g. "transports=tcp:rdma")`},
	{"transports unknown", "/srv *(transports=udp)", `exports:1:19: unknown transport "udp" (transports are tcp and rdma, separated by ":")`},
	{"transports empty", "/srv *(transports=)", `exports:1:19: unknown transport "" (transports are tcp and rdma, separated by ":")`},
	{"backend unknown", "/srv *(backend=zfs)", `exports:1:16: unknown backend "zfs" (backends are os, mem and cephfs)`},
	{"backend typo", "/srv *(backend=mme)", `exports:1:16: unknown backend "mme" (did you mean "mem"?)`},
	{"relative path", "srv/data *", `exports:1:1: export path "srv/data" is not absolute (did you mean "/srv/data"?)`},
	{"missing path", "*(rw)", `exports:1:1: export path "*(rw)" is not absolute`},
	{"duplicate path", "/srv/data *\n/srv/data/ 192.0.2.1", `exports:2:1: duplicate export path "/srv/data" (first at exports:1:1) (put all its clients on one line)`},
	{"missing directory", "/nonexistent *", `exports:1:1: cannot export "/nonexistent": stat /nonexistent: file does not exist (create the directory, or use backend=mem)`},
	{"not a directory", "/etc/passwd *", `exports:1:1: cannot export "/etc/passwd": not a directory (create the directory, or use backend=mem)`},
	{"bad ipv4", "/srv 10.0.0.256(rw)", `exports:1:6: invalid address "10.0.0.256"`},
	{"short ipv4", "/srv 10.0.0", `exports:1:6: invalid address "10.0.0"`},
	{"bad ipv6", "/srv fd00:::1", `exports:1:6: invalid address "fd00:::1"`},
	{"zone", "/srv fe80::1%eth0", `exports:1:6: invalid address "fe80::1%eth0"`},
	{"prefix too long", "/srv 10.0.0.0/33", `exports:1:6: invalid prefix length "33" in "10.0.0.0/33" (IPv4 allows 0 to 32)`},
	{"v6 prefix too long", "/srv fd00::/129", `exports:1:6: invalid prefix length "129" in "fd00::/129" (IPv6 allows 0 to 128)`},
	{"bad prefix address", "/srv 10.0.0/8", `exports:1:6: invalid address "10.0.0" in "10.0.0/8"`},
	{"netmask not contiguous", "/srv 10.0.0.0/255.0.255.0", `exports:1:6: netmask 255.0.255.0 is not contiguous`},
	{"netmask family", "/srv 10.0.0.0/ffff::", `exports:1:6: invalid netmask "ffff::" in "10.0.0.0/ffff::" (write a prefix length or a netmask of the same family, e.g. 10.0.0.0/8 or 10.0.0.0/255.0.0.0)`},
	{"netgroup", "/srv @trusted(rw)", `exports:1:6: netgroups are not supported (list the hosts, or use an address range)`},
	{"ip wildcard", "/srv 10.1.*(rw)", `exports:1:6: wildcards do not work in IP addresses (use 10.1.0.0/16)`},
	{"client list with comma", "/srv a.example,b.example(rw)", `exports:1:6: invalid client "a.example,b.example" (list each client separately: "a(opts) b(opts)")`},
	{"bad host character", "/srv host$x", `exports:1:6: invalid client "host$x": "$" is not allowed in a host name`},
	{"bad host name", "/srv a..b", `exports:1:6: invalid host name "a..b"`},
	{"host name ending in dots", "/srv a..", `exports:1:6: invalid host name "a.."`},
	{"bad pattern", "/srv host[a", `exports:1:6: invalid host name pattern "host[a"`},
	{"space in option list", "/srv 192.0.2.1(rw, sync)", `exports:1:15: missing ")" after the options of "192.0.2.1" (no spaces are allowed inside the option list)` + "\n" +
		`exports:1:24: unexpected ")" without "("`},
	{"text after paren", "/srv 192.0.2.1(rw)x", `exports:1:19: unexpected "x" after ")" (separate clients with white space)`},
	{"defaults not after path", "/srv 192.0.2.1 -rw", `exports:1:16: default options "-rw" must directly follow the export path`},
	{"empty defaults", "/srv - 192.0.2.1", `exports:1:6: empty default option list (write "-opt,opt" with no space after "-")`},
	{"bad default option", "/srv -wr *", `exports:1:7: unknown option "wr" (did you mean "rw"?)`},
	{"quote in client", `/srv "192.0.2.1"`, `exports:1:6: quotes are only allowed in the export path`},
	{"unterminated quote", "\"/srv/a *\n/b *", `exports:1:1: unterminated quoted string (quoted strings cannot span lines)`},
	{"bad escape", `/srv/a\x *`, `exports:1:7: invalid escape in export path (write a space as \040 and a backslash as \134)`},
	{"nul escape", `/srv/a\000 *`, `exports:1:7: invalid escape "\\000" in export path`},
	{"mixed backends", "/srv 192.0.2.1(backend=mem) 192.0.2.2", `exports:1:29: client "192.0.2.2" has backend=os but client "192.0.2.1" has backend=mem; one export has one backend (set backend= once, in the default options after the path)`},
	{"mixed sync async", "/srv 192.0.2.1(async) 192.0.2.2", `exports:1:23: client "192.0.2.2" has sync but client "192.0.2.1" has async; gonfsrdma applies sync/async to the whole export (set sync or async once, in the default options after the path)`},
	{"mixed fsids", "/srv 192.0.2.1(fsid=1) 192.0.2.2(fsid=2)", `exports:1:24: client "192.0.2.2" has fsid=2 but client "192.0.2.1" has fsid=1; one export has one fsid (set fsid= once, in the default options after the path)`},
	{"fsid on one client only", "/srv 192.0.2.1(fsid=1) 192.0.2.2", `exports:1:24: client "192.0.2.2" has no fsid but client "192.0.2.1" has fsid=1; one export has one fsid (set fsid= once, in the default options after the path)`},
	{"fsid reused", "/a *(fsid=3)\n/b *(fsid=3)", `exports:2:4: fsid=3 is already used by "/a" (exports:1:1) (each export needs its own fsid)`},
	{"several errors on one line, in column order", "/srv 10.0.0.*(rw2) @ng(ro) 1.2.3.4/33(sec=krb5)", `exports:1:6: wildcards do not work in IP addresses (use 10.0.0.0/24)` + "\n" +
		`exports:1:15: unknown option "rw2" (did you mean "rw"?)` + "\n" +
		`exports:1:20: netgroups are not supported (list the hosts, or use an address range)` + "\n" +
		`exports:1:28: invalid prefix length "33" in "1.2.3.4/33" (IPv4 allows 0 to 32)` + "\n" +
		`exports:1:43: sec=krb5 is not supported (only sys and none are supported)`},
	{"errors across lines and continuations", "/a 192.0.2.1(rw) \\\n   192.0.2.2(rq)\n/b *(async) \\\n\n/c *(sink)\nrel *", `exports:2:14: unknown option "rq" (did you mean "ro"?)` + "\n" +
		`exports:5:6: unknown option "sink" (did you mean "sync"?)` + "\n" +
		`exports:6:1: export path "rel" is not absolute (did you mean "/rel"?)`},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			tab, _, err := exports.Parse("exports", strings.NewReader(tc.in), exports.ParseOptions{
				Resolver: testResolver(),
				StatDir:  dirs("/srv", "/srv/data", "/srv/a", "/a", "/b", "/c"),
			})
			if err == nil {
				t.Fatalf("no error; table:\n%s", render(t, tab))
			}
			if tab != nil {
				t.Error("a table was returned with errors")
			}
			var el exports.ErrorList
			if !errors.As(err, &el) {
				t.Fatalf("error is %T, want ErrorList", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("errors:\ngot  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestParseTooManyErrors(t *testing.T) {
	var b strings.Builder
	for i := range 150 {
		fmt.Fprintf(&b, "/srv/%d *(bogus)\n", i)
	}
	in := b.String()
	_, _, err := parse(t, in)
	var el exports.ErrorList
	if !errors.As(err, &el) {
		t.Fatalf("error %v", err)
	}
	if len(el) != 101 {
		t.Fatalf("%d errors, want 100 and a last one", len(el))
	}
	if el[99].Pos.Line != 100 || el[100].Msg != "too many errors" {
		t.Errorf("tail: %v / %v", el[99], el[100])
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := exports.Load(dir+"/missing", exports.ParseOptions{}); err == nil {
		t.Error("Load of a missing file succeeded")
	}
	// With the real StatDir: the temp dir exists, a file is not a directory.
	name := dir + "/exports"
	writeFile(t, name, dir+" 127.0.0.1(rw)\n"+name+" ::1\n")
	_, _, err := exports.Load(name, exports.ParseOptions{Resolver: testResolver()})
	want := name + `:2:1: cannot export "` + name + `": not a directory (create the directory, or use backend=mem)`
	if err == nil || err.Error() != want {
		t.Errorf("Load: %v\nwant %s", err, want)
	}
	writeFile(t, name, dir+" 127.0.0.1(rw)\n/no/such/dir/here ::1(backend=mem)\n")
	tab, _, err := exports.Load(name, exports.ParseOptions{Resolver: testResolver()})
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Exports) != 2 || tab.Lookup(dir) == nil {
		t.Errorf("table:\n%s", render(t, tab))
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
