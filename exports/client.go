package exports

// Client matching. A ClientRule's matcher is built once by the parser and
// never changes; the only mutable state is the reverse-lookup cache, which
// belongs to one Table and is guarded by its own mutex.

import (
	"context"
	"net/netip"
	"path"
	"strings"
	"sync"
	"time"
)

// Resolver is the subset of *net.Resolver the package uses; nil in
// ParseOptions means net.DefaultResolver. Tests inject a fake.
type Resolver interface {
	// LookupNetIP resolves a host name (network is "ip").
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	// LookupAddr returns the names of an address (reverse lookup).
	LookupAddr(ctx context.Context, addr string) ([]string, error)
}

// Time limits for resolver calls.
const (
	loadLookupTimeout  = 10 * time.Second // per host name, at load
	matchLookupTimeout = 5 * time.Second  // per client address, at match time
)

type matchKind uint8

const (
	matchAny      matchKind = iota // *
	matchPrefix                    // an address, CIDR or address/netmask
	matchHost                      // a host name, resolved at load
	matchWildcard                  // a name pattern with * ? [..]
)

// matcher decides whether a client address is covered by a rule.
type matcher struct {
	kind    matchKind
	prefix  netip.Prefix // matchPrefix; single addresses are /32 or /128
	name    string       // matchHost, matchWildcard: lower case, no trailing dot
	addrs   []netip.Addr // matchHost: what the name resolved to at load
	unknown bool         // matchHost: the name did not resolve
}

// match reports whether client (already unmapped) is covered. names
// fetches the client's verified reverse names, at most once per Match.
func (m *matcher) match(client netip.Addr, names func() []string) bool {
	switch m.kind {
	case matchAny:
		return true
	case matchPrefix:
		return m.prefix.Contains(client)
	case matchHost:
		for _, a := range m.addrs {
			if a == client {
				return true
			}
		}
	case matchWildcard:
		for _, n := range names() {
			if ok, _ := path.Match(m.name, n); ok {
				return true
			}
		}
	}
	return false
}

// canonical is the spec as WriteTable prints it.
func (m *matcher) canonical() string {
	switch m.kind {
	case matchAny:
		return "*"
	case matchPrefix:
		if m.prefix.IsSingleIP() {
			return m.prefix.Addr().String()
		}
		return m.prefix.String()
	}
	return m.name
}

// normName lower-cases a DNS name and drops a trailing dot.
func normName(s string) string {
	return strings.ToLower(strings.TrimSuffix(s, "."))
}

const (
	cacheTTL = time.Minute
	cacheMax = 1024
)

// revCache caches the forward-confirmed reverse names of client
// addresses for wildcard rules.
type revCache struct {
	r   Resolver
	now func() time.Time

	mu sync.Mutex
	m  map[netip.Addr]revEntry
}

type revEntry struct {
	names   []string
	expires time.Time
}

func newRevCache(r Resolver) *revCache {
	return &revCache{r: r, now: time.Now, m: make(map[netip.Addr]revEntry)}
}

// names returns the client's reverse names that resolve back to the
// client (forward-confirmed, as mountd does, so that whoever controls a
// reverse zone cannot claim an arbitrary name). Failures give no names.
func (c *revCache) names(client netip.Addr) []string {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[client]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.names
	}

	ctx, cancel := context.WithTimeout(context.Background(), matchLookupTimeout)
	defer cancel()
	var verified []string
	ptrs, _ := c.r.LookupAddr(ctx, client.String())
	for _, n := range ptrs {
		n = normName(n)
		if n == "" {
			continue
		}
		addrs, err := c.r.LookupNetIP(ctx, "ip", n)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if a.Unmap() == client {
				verified = append(verified, n)
				break
			}
		}
	}

	c.mu.Lock()
	if len(c.m) >= cacheMax {
		for k, v := range c.m {
			if !now.Before(v.expires) || len(c.m) >= cacheMax {
				delete(c.m, k)
			}
		}
	}
	c.m[client] = revEntry{names: verified, expires: now.Add(cacheTTL)}
	c.mu.Unlock()
	return verified
}
