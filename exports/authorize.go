package exports

import "net/netip"

// The authorization rule: which calls an export's client rules admit, as
// whom, and which MOUNT requests they admit. The NFS server (through the
// daemon's Authorize hook) and the MOUNT server ask it; they only
// translate the answer into their protocol's status.

// Caller is what the authorization rule reads of an NFS or NLM call.
// GIDs may alias the RPC credential; Authorize does not keep it.
type Caller struct {
	Client    netip.Addr // source address; IPv4-mapped IPv6 matches as IPv4
	Port      int        // source port
	Transport Transport
	// LockManager marks a call of the lock manager (NLM), which always
	// travels over TCP or UDP: transports= names what NFS may use and
	// does not apply to it, also for clients of an RDMA-only export.
	LockManager bool
	Flavor      uint32 // RPC auth flavor
	// HasUnix says the call carries an AUTH_SYS identity (UID, GID,
	// GIDs); without one it runs as AnonUID/AnonGID.
	HasUnix  bool
	UID, GID uint32
	GIDs     []uint32
}

// Identity is who an admitted call runs as, after squashing.
type Identity struct {
	UID, GID uint32
	GIDs     []uint32 // a new slice only when squashing changed the list
	ReadOnly bool
}

// Refusal says why the rule refuses a caller; Admitted (zero) admits it.
type Refusal uint8

// Refusals, in the order Authorize checks them.
const (
	Admitted Refusal = iota
	// RefusedClient: no client rule of the export matches the caller
	// (NFS3ERR_ACCES, MNT3ERR_ACCES).
	RefusedClient
	// RefusedTransport: transports= excludes the call's transport
	// (NFS3ERR_ACCES).
	RefusedTransport
	// RefusedFlavor: the auth flavor is not in sec= (RFC 2623 section
	// 2.3.2: the call is rejected with AUTH_TOOWEAK).
	RefusedFlavor
	// RefusedPort: secure, and the source port is not reserved
	// (NFS3ERR_PERM; MNT3ERR_ACCES for MOUNT).
	RefusedPort
)

// String names the refusal for logs.
func (r Refusal) String() string {
	switch r {
	case Admitted:
		return "admitted"
	case RefusedClient:
		return "no rule matches the client"
	case RefusedTransport:
		return "transport not in transports="
	case RefusedFlavor:
		return "auth flavor not in sec="
	case RefusedPort:
		return "insecure source port"
	}
	return "refusal(?)"
}

// Authorize applies e's client rules to an NFS or NLM call: the first
// rule matching c.Client decides transport, flavor, port, squashing and
// read-only. It does not allocate unless squashing rewrites the
// supplementary groups.
func (e *Export) Authorize(c *Caller) (Identity, Refusal) {
	rule, ok := e.Match(c.Client.Unmap())
	if !ok {
		return Identity{}, RefusedClient
	}
	return rule.Options.Authorize(c)
}

// Authorize is the decision of one client rule's options for c (see
// Export.Authorize).
func (o *Options) Authorize(c *Caller) (Identity, Refusal) {
	if !c.LockManager && !o.AllowsTransport(c.Transport) {
		return Identity{}, RefusedTransport
	}
	if !o.AllowsFlavor(c.Flavor) {
		return Identity{}, RefusedFlavor
	}
	if !o.PortOK(c.Transport, c.Port) {
		return Identity{}, RefusedPort
	}
	id := Identity{UID: o.AnonUID, GID: o.AnonGID, ReadOnly: o.ReadOnly}
	if c.HasUnix {
		id.UID, id.GID, id.GIDs = o.SquashIDs(c.UID, c.GID, c.GIDs)
	}
	return id, Admitted
}

// AuthorizeMount applies e's client rules to a MOUNT request from client
// at port, as mountd: the first matching rule decides, and with secure
// the port must be reserved (MOUNT travels over TCP or UDP). It returns
// the rule, for its sec= flavors.
func (e *Export) AuthorizeMount(client netip.Addr, port int) (*ClientRule, Refusal) {
	rule, ok := e.Match(client.Unmap())
	if !ok {
		return nil, RefusedClient
	}
	if !rule.Options.PortOK(TCP, port) {
		return nil, RefusedPort
	}
	return rule, Admitted
}
