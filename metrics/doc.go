// Package metrics exports gonfsrdma's counters in the Prometheus text
// format on /metrics, with /healthz beside it, and reads such an
// endpoint back for `gonfsrdma stats`.
//
// The counters themselves live in the packages that own the events, as
// plain atomics (package meter and the owners' Counts methods); what is
// counted per call (calls by procedure and status, RPC bytes, inline
// RDMA bytes) is kept per connection, so calls on different connections
// never add to one cache line, and the owners add the connections up
// when asked. This package turns them into Prometheus metrics only when
// scraped, through one Collector that builds constant metrics from a
// Sources snapshot. So a call on the data path never touches a
// Prometheus type, a label map or a lock of this package; without
// --metrics-listen the dispatcher counts no call at all.
//
// Per-client series are bounded: only the TopClients busiest addresses
// (by bytes) of a meter.Clients table get a series, whatever the number
// of clients.
//
// Ownership: Sources' functions and pointers belong to the daemon; the
// Collector only reads through them, from the scraping goroutine, and
// holds nothing between scrapes. The HTTP server is the caller's to Close.
package metrics
