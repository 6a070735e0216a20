package vfs

// CacheCounts are a backend's open-file cache counters.
type CacheCounts struct {
	// Hits are handle resolutions answered from the cache; Misses
	// opened the object (open_by_handle_at); Evictions closed entries
	// for the cache's bound; Open is the descriptors held now.
	Hits, Misses, Evictions uint64
	Open                    int64
}

// OpenFileCacher is implemented by backends with an open-file cache (the
// local backend), for the metrics.
type OpenFileCacher interface {
	OpenFileCache() CacheCounts
}
