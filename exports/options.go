package exports

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// ONC RPC authentication flavors (RFC 5531 section 8.2) accepted by sec=.
const (
	AuthNone uint32 = 0 // AUTH_NONE, sec=none
	AuthSys  uint32 = 1 // AUTH_SYS, sec=sys
)

// DefaultAnonID is the default anonuid and anongid (nobody/nogroup).
const DefaultAnonID = 65534

// DefaultMaxID is the largest uid or gid a caller may claim when maxid=
// is not given: the largest valid Linux id. 0xffffffff ((uid_t)-1) is
// never valid: to chown(2) it means "unchanged", to setfsuid(2) "query".
const DefaultMaxID = 0xfffffffe

// Transport is the transport kind a call arrives on: oncrpc's, the one
// transport-kind type of the tree.
type Transport = oncrpc.Transport

// The transports option transports= names.
const (
	TCP  = oncrpc.TCP
	RDMA = oncrpc.RDMA
)

// TransportSet is a set of transports (option transports=). It speaks
// of tcp and rdma only: a call over UDP counts as tcp.
type TransportSet uint8

// AllTransports is the default: transports=tcp:rdma.
const AllTransports = TransportSet(1<<TCP | 1<<RDMA)

// TransportsOf returns the set of the given transports.
func TransportsOf(ts ...Transport) TransportSet {
	var s TransportSet
	for _, t := range ts {
		s |= transportBit(t)
	}
	return s
}

func transportBit(t Transport) TransportSet {
	if t == oncrpc.UDP {
		t = TCP
	}
	return 1 << t
}

// Has reports whether t is in the set.
func (s TransportSet) Has(t Transport) bool { return s&transportBit(t) != 0 }

// String spells the set as in the transports= option, e.g. "tcp:rdma".
func (s TransportSet) String() string {
	var parts []string
	for _, t := range []Transport{TCP, RDMA} {
		if s.Has(t) {
			parts = append(parts, t.String())
		}
	}
	return strings.Join(parts, ":")
}

// SquashMode says which callers are mapped to the anonymous identity.
type SquashMode uint8

// The squash modes. RootSquash is the default.
const (
	RootSquash   SquashMode = iota // root_squash: uid 0 and gid 0 become anonuid/anongid
	NoRootSquash                   // no_root_squash: identities pass unchanged
	AllSquash                      // all_squash: every caller becomes anonuid/anongid
)

// String returns the option name: "root_squash", "no_root_squash" or
// "all_squash".
func (m SquashMode) String() string {
	switch m {
	case RootSquash:
		return "root_squash"
	case NoRootSquash:
		return "no_root_squash"
	case AllSquash:
		return "all_squash"
	}
	return "squash(" + strconv.Itoa(int(m)) + ")"
}

// Backends named by the backend= option.
const (
	BackendOS  = "os"  // the export path is a directory of the local file system
	BackendMem = "mem" // an in-memory file system; the path is only a name
	// BackendCephFS exports a CephFS directory (the ceph_* options) through
	// libcephfs; the path is only the name clients mount. Several servers
	// may export the same directory (see vfs/cephfs).
	BackendCephFS = "cephfs"
)

// CephOptions are a backend=cephfs export's cluster settings, the ceph_*
// options (named after mount.ceph's where it has one). Empty fields take
// the defaults given.
type CephOptions struct {
	Conf    string // ceph_conf=FILE: the cluster's ceph.conf (default: libcephfs's search: $CEPH_CONF, /etc/ceph/ceph.conf)
	Name    string // ceph_name=ID: the Ceph client, without "client." (default admin)
	Keyring string // ceph_keyring=FILE: the client's keyring (default: the configuration's)
	FS      string // ceph_fs=NAME: the file system (default: the cluster's default)
	Path    string // ceph_path=/DIR: the exported directory inside it (default /)
	FHKey   string // ceph_fhkey=FILE: the file handle key, the same file on every server (default: kept in the directory's xattr)
}

// cephOptionNames are the ceph_* options, in String's order.
var cephOptionNames = []string{"ceph_conf", "ceph_name", "ceph_keyring", "ceph_fs", "ceph_path", "ceph_fhkey"}

func (c *CephOptions) field(name string) *string {
	switch name {
	case "ceph_conf":
		return &c.Conf
	case "ceph_name":
		return &c.Name
	case "ceph_keyring":
		return &c.Keyring
	case "ceph_fs":
		return &c.FS
	case "ceph_path":
		return &c.Path
	case "ceph_fhkey":
		return &c.FHKey
	}
	return nil
}

// String is the options that are set, in exports(5) syntax ("" for none).
func (c *CephOptions) String() string {
	var b []byte
	for _, n := range cephOptionNames {
		if v := *c.field(n); v != "" {
			if len(b) > 0 {
				b = append(b, ',')
			}
			b = append(b, n...)
			b = append(b, '=')
			b = append(b, v...)
		}
	}
	return string(b)
}

// Options are the effective options of one client rule: the defaults,
// overridden by the line's "-opts" default list, overridden by the
// client's own "(opts)".
type Options struct {
	ReadOnly   bool         // ro (default) / rw
	Async      bool         // sync (default) / async: stable WRITEs and COMMIT answered without waiting for storage (per export: every rule must agree)
	Insecure   bool         // secure (default) / insecure
	Squash     SquashMode   // root_squash (default) / no_root_squash / all_squash
	AnonUID    uint32       // anonuid=N, default 65534
	AnonGID    uint32       // anongid=N, default 65534
	MaxID      uint32       // maxid=N: larger uids and gids are squashed; 0 means DefaultMaxID
	FSID       uint32       // fsid=N; fsid=root means 0
	FSIDSet    bool         // whether fsid= was given
	Flavors    []uint32     // sec=, in the admin's order; default [AuthSys]
	Transports TransportSet // transports=, default AllTransports
	Backend    string       // backend=, BackendOS (default), BackendMem or BackendCephFS
	Ceph       CephOptions  // ceph_*= (backend=cephfs only; per export)
	Ignored    []string     // knfsd options accepted without effect, as written
}

// DefaultOptions returns the options of a client given with no options:
// ro, sync, secure, root_squash, anonuid=65534, anongid=65534, sec=sys,
// transports=tcp:rdma, backend=os.
func DefaultOptions() Options {
	return Options{
		ReadOnly:   true,
		Squash:     RootSquash,
		AnonUID:    DefaultAnonID,
		AnonGID:    DefaultAnonID,
		Flavors:    []uint32{AuthSys},
		Transports: AllTransports,
		Backend:    BackendOS,
	}
}

// AllowsTransport reports whether calls arriving on t may use this rule.
func (o *Options) AllowsTransport(t Transport) bool { return o.Transports.Has(t) }

// AllowsFlavor reports whether the RPC auth flavor f is in the sec= list.
func (o *Options) AllowsFlavor(f uint32) bool { return slices.Contains(o.Flavors, f) }

// PortOK is the "secure" check: with secure (the default) a TCP caller
// must come from a reserved source port (below 1024). RDMA calls always
// pass, as in knfsd, which treats RDMA connections as secure. With
// insecure every port passes.
func (o *Options) PortOK(t Transport, port int) bool {
	if o.Insecure || t == RDMA {
		return true
	}
	return port >= 0 && port < 1024
}

// MaxIDOrDefault is the effective maxid: MaxID, or DefaultMaxID when 0.
func (o *Options) MaxIDOrDefault() uint32 {
	if o.MaxID == 0 || o.MaxID > DefaultMaxID {
		return DefaultMaxID
	}
	return o.MaxID
}

// SquashIDs maps an AUTH_SYS identity as knfsd does, before any file
// system call. all_squash: the uid becomes AnonUID, the gid AnonGID, and
// the supplementary groups are dropped. Otherwise an invalid id (above
// MaxIDOrDefault, which always excludes 0xffffffff) becomes AnonUID or
// AnonGID (knfsd's nfsd_setuser maps INVALID_UID and INVALID_GID to the
// anonymous ids), and under root_squash so do uid 0 and gid 0; in the
// supplementary list such gids become AnonGID. no_root_squash leaves
// valid ids alone. The gids slice is never modified; a changed list is a
// new slice.
//
// For AUTH_NONE calls, which carry no identity, use AnonUID and AnonGID.
func (o *Options) SquashIDs(uid, gid uint32, gids []uint32) (uint32, uint32, []uint32) {
	if o.Squash == AllSquash {
		return o.AnonUID, o.AnonGID, nil
	}
	max, root := o.MaxIDOrDefault(), o.Squash == RootSquash
	squash := func(id uint32) bool { return id > max || (root && id == 0) }
	if squash(uid) {
		uid = o.AnonUID
	}
	if squash(gid) {
		gid = o.AnonGID
	}
	if slices.ContainsFunc(gids, squash) {
		gids = slices.Clone(gids)
		for i, g := range gids {
			if squash(g) {
				gids[i] = o.AnonGID
			}
		}
	}
	return uid, gid, gids
}

// String spells out every effective option in a fixed order, in the
// exports(5) syntax, e.g.
// "rw,async,insecure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os".
// Ignored options are not included, nor maxid= when it is the default.
func (o *Options) String() string {
	b := make([]byte, 0, 128)
	b = append(b, pick(o.ReadOnly, "ro", "rw")...)
	b = append(b, pick(o.Async, ",async", ",sync")...)
	b = append(b, pick(o.Insecure, ",insecure", ",secure")...)
	b = append(b, ',')
	b = append(b, o.Squash.String()...)
	b = append(b, ",anonuid="...)
	b = strconv.AppendUint(b, uint64(o.AnonUID), 10)
	b = append(b, ",anongid="...)
	b = strconv.AppendUint(b, uint64(o.AnonGID), 10)
	if o.MaxIDOrDefault() != DefaultMaxID {
		b = append(b, ",maxid="...)
		b = strconv.AppendUint(b, uint64(o.MaxID), 10)
	}
	if o.FSIDSet {
		b = append(b, ",fsid="...)
		b = strconv.AppendUint(b, uint64(o.FSID), 10)
	}
	if len(o.Flavors) > 0 {
		b = append(b, ",sec="...)
		for i, f := range o.Flavors {
			if i > 0 {
				b = append(b, ':')
			}
			b = append(b, flavorName(f)...)
		}
	}
	b = append(b, ",transports="...)
	b = append(b, o.Transports.String()...)
	b = append(b, ",backend="...)
	b = append(b, o.Backend...)
	if c := o.Ceph.String(); c != "" {
		b = append(b, ',')
		b = append(b, c...)
	}
	return string(b)
}

func pick(c bool, yes, no string) string {
	if c {
		return yes
	}
	return no
}

func flavorName(f uint32) string {
	switch f {
	case AuthNone:
		return "none"
	case AuthSys:
		return "sys"
	}
	return strconv.FormatUint(uint64(f), 10)
}

// clone returns o with its slices copied, so rules never share them.
func (o Options) clone() Options {
	o.Flavors = slices.Clone(o.Flavors)
	o.Ignored = slices.Clone(o.Ignored)
	return o
}
