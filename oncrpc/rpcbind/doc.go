// Package rpcbind implements the rpcbind protocol (RFC 1833): portmapper
// version 2 and rpcbind versions 3 and 4 as one oncrpc.Program over a
// concurrent Registry, client helpers for every procedure a service needs
// (GETPORT, GETADDR, DUMP, SET, UNSET), universal address parsing and
// formatting (RFC 5665), and Start, which either serves rpcbind on port 111
// or, when the system's rpcbind owns the port, registers this process's
// programs with it and unregisters them at Close.
//
// # Wire types
//
// PortMapping is struct pmap (RFC 1833 section 3.1), Mapping is struct rpcb
// (section 2.1), Entry is struct rpcb_entry (section 2.1). Lists are XDR
// optional-data chains (pmaplist, rp__list, rpcb_entry_list): each element
// is preceded by TRUE and the list ends with FALSE.
//
// # Behaviour worth knowing
//
//   - All versions share one table, as in rpcbind(8); version 2 sees only
//     the "tcp" and "udp" entries.
//   - SET and UNSET are honoured from loopback callers only; other callers
//     get FALSE. Owners are recorded but not enforced.
//   - GETPORT and GETADDR return another version's address when the asked
//     version is not registered (RFC 1833 section 2.2); GETVERSADDR does not.
//     Wildcard hosts ("0.0.0.0", "::") are replaced by the address the call
//     arrived on.
//   - CALLIT, BCAST and INDIRECT (remote call forwarding), UADDR2TADDR,
//     TADDR2UADDR and GETSTAT answer PROC_UNAVAIL; see Registry.Program.
//
// # Buffer ownership
//
// Decoders copy every string out of the call buffer, so nothing decoded
// refers to transport memory after a handler returns. Registry methods take
// and return Mapping values; Dump returns a fresh slice. Client helpers
// return freshly allocated results owned by the caller.
package rpcbind
