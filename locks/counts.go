package locks

// Counts are the table's contents by kind.
type Counts struct {
	Held    int // granted byte-range locks
	Blocked int // blocked lock requests waiting for a grant
	Shares  int // DOS share reservations
}

// Counts walks the table (under its mutex, for the metrics at scrape
// time; nothing on the lock paths changes).
func (t *Table) Counts() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c Counts
	for _, f := range t.files {
		c.Held += len(f.locks)
		c.Blocked += len(f.waiters)
		c.Shares += len(f.shares)
	}
	return c
}
