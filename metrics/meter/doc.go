// Package meter holds the counters that the packages owning an event
// (oncrpc, rpcrdma, nfs, the vfs caches, ...) bump on their data paths,
// for the metrics package to read at scrape time, and the bounded table
// of client addresses those counts are summed under.
//
// A Histogram is plain sync/atomic: an observation costs a bit-length
// and two atomic adds, with no map lookup, no label and no allocation.
// The Clients table adds nothing per call: a connection registers a
// TrafficSource (its own counters, which its owner keeps) when it opens,
// the table reads the sources when asked for the busiest clients, and
// folds a source's traffic into its address's entry when the connection
// closes. Names, labels and the Prometheus types are the metrics
// package's business, at scrape time only. The package imports nothing
// beyond the standard library so that hot packages can embed its types
// without pulling in a metrics client.
//
// Ownership: a Histogram belongs to the object that embeds it; readers
// only Load. A *Client handed out by Clients.Acquire stays valid until
// the matching Release; the TrafficSource passed to Acquire must stay
// readable until then (the table calls it under its lock, so it must
// only load), and must have counted its last call when it is released.
package meter
