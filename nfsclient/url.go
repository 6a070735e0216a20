package nfsclient

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// Proto is the transport NFS calls use.
type Proto string

// Transports.
const (
	ProtoTCP  Proto = "tcp"
	ProtoRDMA Proto = "rdma"
)

// Config is everything Dial needs. ParseURL fills one from an nfs:// URL;
// zero fields take the defaults documented on each.
type Config struct {
	// Host is the server's host name or IP address.
	Host string
	// Path is the absolute path the URL names: an export, or a file or
	// directory below one. Dial mounts Export when set, else the longest
	// export (from the server's MOUNT export list) that is a prefix of
	// Path; without such a list it mounts Path itself.
	Path string
	// Export, when set, is the export to MOUNT (a prefix of Path): for
	// servers that cannot list their exports.
	Export string

	// Proto is tcp (default) or rdma. FallbackTCP makes Dial use TCP when
	// an RDMA connection cannot be made.
	Proto       Proto
	FallbackTCP bool
	// Port is the NFS port: default 2049 for TCP, 20049 for RDMA.
	Port int
	// MountPort is the MOUNT v3 (TCP) port; 0 asks rpcbind on port 111.
	MountPort int

	// UID, GID, GIDs and Machine are the AUTH_SYS identity (RFC 5531
	// appendix A) of every call; default uid 0, gid 0, the local host name.
	UID, GID uint32
	GIDs     []uint32
	Machine  string

	// NConnect is the number of transport connections calls are spread
	// over (default 1, at most 16).
	NConnect int
	// BlockSize is the size of one READ or WRITE (default: the server's
	// preferred size from FSINFO, capped at its maximum and at 1 MiB);
	// Depth is how many a large ReadAt or WriteAt keeps in flight
	// (default 8).
	BlockSize int
	Depth     int
	// Retries is how many times a call whose connection broke is sent
	// again on a new connection (default 5); 0 is the default, a negative
	// value disables retries.
	Retries int
	// Timeout bounds each attempt of a call (default DefaultTimeout, the
	// kernel client's timeo=600); 0 is the default, a negative value
	// means no per-attempt timeout (only the caller's context bounds a
	// call). An attempt that times out drops its connection and the call
	// is sent again, with the same XID, on a new one, counted against
	// Retries: a server that vanished without a word (its disconnect lost
	// on a dead link, a TCP peer gone silently) leaves the client's calls
	// delivered and unanswered on a connection that still looks alive, and
	// only a timeout gets them answered.
	Timeout time.Duration
	// MaxUncommitted bounds the UNSTABLE WRITE data a File keeps for
	// re-sending until a COMMIT makes it stable (default 64 MiB).
	MaxUncommitted int

	// Dialer hooks for tests and embedding (not settable from a URL).
	RDMA RDMAOptions
}

// Defaults.
const (
	DefaultTCPPort        = 2049
	DefaultRDMAPort       = 20049
	DefaultDepth          = 8
	DefaultRetries        = 5
	DefaultMaxUncommitted = 64 << 20
	maxBlockSize          = 1 << 20
	maxNConnect           = 16
)

// DefaultTimeout is the kernel client's timeo for TCP and RDMA mounts
// (600 deciseconds). It bounds one attempt of one call, from the time it
// waits for its turn on the connection: DefaultDepth 1 MiB READs or
// WRITEs in flight together (8 MiB) exceed it only on a link slower than
// about 140 KB/s, and the server's fsync for a COMMIT of
// DefaultMaxUncommitted bytes only on a disk slower than about 1.1 MB/s.
// A server slower than that is asked again on a new connection (same
// XID), up to Retries times: an idempotent call (READ, WRITE, COMMIT)
// runs again, a non-idempotent one is answered by the server's duplicate
// request cache once its first execution has finished.
const DefaultTimeout = 60 * time.Second

// ParseURL parses an NFS URL in the form of RFC 2224 extended with query
// parameters:
//
//	nfs://host[:port]/export[/path]?proto=rdma|tcp&fallback=tcp
//	    &mountport=N&export=PATH&uid=N&gid=N&gids=N,N&machine=NAME&nconnect=N
//	    &bs=SIZE&depth=N&retries=N&timeout=DURATION
//
// The path after the host is an export or a path below one (Dial finds
// which). An unknown query parameter is an error. SIZE accepts K, M, G
// suffixes. retries=0 sends a call once; timeout= bounds each attempt of
// a call (a Go duration such as 30s; default 60s, DefaultTimeout), and
// timeout=0 means no per-attempt timeout, as retries=0 means none.
func ParseURL(raw string) (Config, error) {
	var cfg Config
	u, err := url.Parse(raw)
	if err != nil {
		return cfg, err
	}
	if u.Scheme != "nfs" {
		return cfg, fmt.Errorf("nfsclient: %q: scheme must be nfs", raw)
	}
	if u.User != nil {
		return cfg, fmt.Errorf("nfsclient: %q: user information is not supported (use uid=, gid=)", raw)
	}
	cfg.Host = u.Hostname()
	if cfg.Host == "" {
		return cfg, fmt.Errorf("nfsclient: %q: no host", raw)
	}
	if strings.Contains(cfg.Host, ":") && net.ParseIP(cfg.Host) == nil {
		return cfg, fmt.Errorf("nfsclient: %q: host %q is not an IPv6 address", raw, cfg.Host)
	}
	if p := u.Port(); p != "" {
		if cfg.Port, err = parsePort(p); err != nil {
			return cfg, fmt.Errorf("nfsclient: %q: port: %w", raw, err)
		}
	}
	if u.Fragment != "" || u.RawFragment != "" {
		return cfg, fmt.Errorf("nfsclient: %q: a fragment is not part of an NFS URL", raw)
	}
	cfg.Path = path.Clean("/" + u.Path)
	for key, vals := range u.Query() {
		if len(vals) != 1 {
			return cfg, fmt.Errorf("nfsclient: %q: %s given %d times", raw, key, len(vals))
		}
		if err := cfg.set(key, vals[0]); err != nil {
			return cfg, fmt.Errorf("nfsclient: %q: %s: %w", raw, key, err)
		}
	}
	if cfg.Export != "" && !underExport(cfg.Path, cfg.Export) {
		return cfg, fmt.Errorf("nfsclient: %q: export %s is not a prefix of the path %s", raw, cfg.Export, cfg.Path)
	}
	return cfg, nil
}

func (cfg *Config) set(key, v string) error {
	var err error
	switch key {
	case "proto":
		switch Proto(v) {
		case ProtoTCP, ProtoRDMA:
			cfg.Proto = Proto(v)
		default:
			return fmt.Errorf("%q is not tcp or rdma", v)
		}
	case "fallback":
		if v != "tcp" {
			return fmt.Errorf("%q: the only fallback is tcp", v)
		}
		cfg.FallbackTCP = true
	case "mountport":
		cfg.MountPort, err = parsePort(v)
	case "export":
		cfg.Export = path.Clean("/" + v)
	case "uid":
		cfg.UID, err = parseUint32(v)
	case "gid":
		cfg.GID, err = parseUint32(v)
	case "gids":
		cfg.GIDs = nil
		for _, s := range strings.Split(v, ",") {
			g, err := parseUint32(s)
			if err != nil {
				return err
			}
			cfg.GIDs = append(cfg.GIDs, g)
		}
		if len(cfg.GIDs) > 16 {
			return fmt.Errorf("%d groups: AUTH_SYS carries at most 16", len(cfg.GIDs))
		}
	case "machine":
		if len(v) > 255 {
			return fmt.Errorf("machine name longer than 255 bytes")
		}
		cfg.Machine = v
	case "nconnect":
		cfg.NConnect, err = strconv.Atoi(v)
		if err == nil && (cfg.NConnect < 1 || cfg.NConnect > maxNConnect) {
			err = fmt.Errorf("%d is not 1..%d", cfg.NConnect, maxNConnect)
		}
	case "bs":
		var n int64
		n, err = ParseSize(v)
		if err == nil && (n < 4096 || n > maxBlockSize) {
			err = fmt.Errorf("%d is not 4096..%d", n, maxBlockSize)
		}
		cfg.BlockSize = int(n)
	case "depth":
		cfg.Depth, err = strconv.Atoi(v)
		if err == nil && (cfg.Depth < 1 || cfg.Depth > 256) {
			err = fmt.Errorf("%d is not 1..256", cfg.Depth)
		}
	case "retries":
		cfg.Retries, err = strconv.Atoi(v)
		if err == nil && cfg.Retries == 0 {
			cfg.Retries = -1
		}
	case "timeout":
		cfg.Timeout, err = time.ParseDuration(v)
		switch {
		case err != nil:
		case cfg.Timeout < 0:
			err = fmt.Errorf("%v is negative (timeout=0 means none)", cfg.Timeout)
		case cfg.Timeout == 0:
			cfg.Timeout = -1 // none: Config's 0 is the default
		}
	default:
		return fmt.Errorf("unknown parameter")
	}
	return err
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q is not a port", s)
	}
	return n, nil
}

func parseUint32(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err
}

// ParseSize parses a byte count with an optional K, M, G or T suffix
// (powers of 1024; a trailing "iB" or "B" is allowed).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return n * mult, nil
}

// nfsAddr and mountAddr are the addresses to dial.
func (cfg *Config) nfsAddr(proto Proto) string {
	port := cfg.Port
	if port == 0 {
		port = DefaultTCPPort
		if proto == ProtoRDMA {
			port = DefaultRDMAPort
		}
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(port))
}

// String renders cfg as a URL that ParseURL turns back into cfg (without
// the hooks).
func (cfg Config) String() string {
	u := url.URL{Scheme: "nfs", Host: cfg.Host, Path: cfg.Path}
	if strings.Contains(cfg.Host, ":") {
		u.Host = "[" + cfg.Host + "]" // an IPv6 address
	}
	if cfg.Port != 0 {
		u.Host = net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	}
	q := url.Values{}
	if cfg.Proto != "" {
		q.Set("proto", string(cfg.Proto))
	}
	if cfg.FallbackTCP {
		q.Set("fallback", "tcp")
	}
	if cfg.MountPort != 0 {
		q.Set("mountport", strconv.Itoa(cfg.MountPort))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// underExport reports whether p is export or a path below it.
func underExport(p, export string) bool {
	export = strings.TrimSuffix(export, "/")
	return p == export || export == "" || strings.HasPrefix(p, export+"/")
}
