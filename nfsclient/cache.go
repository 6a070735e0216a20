package nfsclient

import (
	"strings"
	"sync"
	"time"
)

// dirCacheTTL is how long a directory's path-to-handle mapping is reused
// without LOOKUPs, like the kernel client's dentry cache with its
// attribute timeouts. Within it, a directory another client renamed is
// still found under its old path (its handle stays valid); one removed
// answers NFS3ERR_STALE, which drops the entry and resolves again.
const dirCacheTTL = 3 * time.Second

// dirCache maps export-relative directory paths to handles.
type dirCache struct {
	mu sync.Mutex
	m  map[string]cachedDir
}

type cachedDir struct {
	fh []byte
	at time.Time
}

func (c *dirCache) get(p string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[p]
	if !ok {
		return nil, false
	}
	if time.Since(e.at) > dirCacheTTL {
		delete(c.m, p)
		return nil, false
	}
	return e.fh, true
}

func (c *dirCache) put(p string, fh []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]cachedDir)
	}
	if len(c.m) > 4096 {
		clear(c.m)
	}
	c.m[p] = cachedDir{fh: fh, at: time.Now()}
}

// forget drops p and everything below it.
func (c *dirCache) forget(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k == p || strings.HasPrefix(k, p+"/") {
			delete(c.m, k)
		}
	}
}
