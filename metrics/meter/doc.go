// Package meter holds the counters that the packages owning an event
// (oncrpc, rpcrdma, nfs, the vfs caches, ...) bump on their data paths,
// for the metrics package to read at scrape time.
//
// Everything here is plain sync/atomic: an event costs one or two atomic
// adds on memory its owner already holds, with no map lookup, no label
// and no allocation. Names, labels and the Prometheus types are the
// metrics package's business, at scrape time only. The package imports
// nothing beyond the standard library so that hot packages can embed its
// types without pulling in a metrics client.
//
// Ownership: a Histogram or Client belongs to the object that embeds or
// acquired it; readers only Load. A *Client handed out by
// Clients.Acquire stays valid until the matching Release; after Release
// its owner must not add to it (the table may fold and drop it).
package meter
