// Package exports reads an exports(5) file and answers the questions the
// MOUNT and NFS layers ask: is this path exported, which rule covers this
// client, which options apply, and which identity does the call run as.
//
// # File syntax
//
// One export per logical line, as in exports(5):
//
//	# comment
//	/srv/data   10.0.0.0/8(rw) 192.168.1.7 *.lab.example(ro)  # trailing comment
//	/srv/scratch -rw,insecure,backend=mem \
//	             127.0.0.1 ::1(ro)
//	"/srv/with space"  *(ro)
//	/srv/with\040space2  *(ro)
//
// In detail:
//
//   - A '#' that starts a token (at the start of a line, after white space
//     or after ')') and is not inside quotes starts a comment running to the
//     end of the physical line.
//   - A '\' at the end of a line (trailing white space and comments allowed
//     after it) joins the next line. A '\' inside a comment does not.
//   - The path comes first. Double quotes may enclose any part of it and
//     \ooo octal escapes (\040 is a space) may appear anywhere in it. It
//     must be absolute; it is cleaned (path.Clean). Symbolic links are not
//     resolved. Each path may appear on one line only.
//   - "-opt,opt" directly after the path sets default options for the
//     clients of that line; a client's own "(opt,...)" applies on top.
//   - A client is "client(opts)", a bare "client" (default options), or
//     "(opts)" with no client, which means every host (with a warning, as
//     exportfs gives). A line with no client exports to every host with a
//     warning. No spaces are allowed inside "(...)".
//
// Clients:
//
//   - "*": every host.
//   - an IPv4 or IPv6 address; a prefix "10.0.0.0/8", "fd00::/64"; or an
//     address and netmask "10.0.0.0/255.0.0.0". Host bits are masked off
//     (with a warning). IPv4-mapped IPv6 callers match as IPv4.
//   - a host name: resolved at load with ParseOptions.Resolver; a name that
//     does not resolve is a warning and its rule matches nobody until the
//     next reload.
//   - a name with wildcards * ? [...] ([!...] negates): matched at match
//     time, case-insensitively, against the caller's reverse-resolved names
//     that resolve back to the caller (forward-confirmed, as mountd does).
//     Results are cached per Table for a minute. '*' matches dots too.
//   - "@netgroup": an error, netgroups are not supported. IP wildcards
//     such as 10.0.0.* are an error with a CIDR suggestion.
//
// Rules are tried in file order; the first that covers the caller wins.
//
// Options (defaults first): ro/rw; sync/async; secure/insecure (secure:
// TCP callers need a source port below 1024, RDMA always passes, as in
// knfsd); root_squash/no_root_squash and all_squash/no_all_squash (two
// flags as in knfsd, folded into one SquashMode: all_squash beats
// no_root_squash); anonuid=N and anongid=N (65534); maxid=N (uids and
// gids above N, and always 0xffffffff, are mapped to anonuid/anongid
// under every squash mode; default 4294967294); fsid=N or fsid=root
// (= 0; UUID forms are rejected: "fsid UUIDs are not supported");
// sec=sys, sec=none or sec=sys:none (the order is kept); transports=tcp,
// rdma or tcp:rdma (default both); backend=os, mem or cephfs (default os;
// mem and cephfs need no directory: the path is only the name clients
// mount); with cephfs, ceph_conf=FILE, ceph_name=ID, ceph_keyring=FILE,
// ceph_fs=NAME, ceph_path=/DIR and ceph_fhkey=FILE (CephOptions; files
// must exist, paths be absolute). Later options override earlier ones.
//
// The knfsd options no_subtree_check, subtree_check, wdelay, no_wdelay,
// hide, nohide, crossmnt, nocrossmnt, no_acl, acl and the NLM options
// secure_locks, insecure_locks, auth_nlm, no_auth_nlm are accepted, have
// no effect and are listed in Options.Ignored. Other knfsd options
// (mountpoint, refer, replicas, pnfs, ...) are errors.
//
// The backend (with its ceph_* options) and the fsid select the file
// system and its file handles, and sync/async decides whether its writes
// wait for storage, so all clients of one export must agree on them (set
// them in the "-opts" defaults), and two exports may not share an fsid.
//
// async is knfsd's: stable WRITEs are answered with the stability the
// client asked for and COMMIT answers OK, neither waiting for storage; the
// daemon logs a warning for every async export at start-up and reload,
// since data acknowledged so is lost if the server crashes.
//
// # Errors
//
// Parse reports every problem, not just the first, as an ErrorList of
// *Error, each "file:line:column: message (hint)", e.g.
//
//	exports:3:17: unknown option "rw2" (did you mean "rw"?)
//
// Columns count bytes from 1. With any error no Table is returned.
// Warnings (unresolvable names, unreachable or duplicate clients, host
// bits in a prefix, missing clients) never stop a load.
//
// # Use
//
// Build a Table with Load, Parse or Default and keep it in a Holder. Per
// call, take h.Load() once, then Lookup the path (MOUNT) and Match the
// caller; check AllowsTransport, PortOK and AllowsFlavor on the rule's
// Options, map the credential with SquashIDs, and refuse writes when
// ReadOnly. MOUNT EXPORT lists each Export's Path with Groups().
// WriteTable prints the effective table for "gonfsrdma exports check".
//
// # Ownership
//
// A Table and everything reachable from it (Exports, Rules, Options and
// their slices) is immutable once returned: callers must not modify it,
// and may share it between goroutines freely. The only mutable state, the
// reverse-lookup cache of wildcard rules, is internal and locked. Holder
// swaps whole tables atomically; a reload never changes a Table that a
// call is already using. The package keeps no global state and does no
// I/O except Load's file read, the StatDir check and resolver calls.
package exports
