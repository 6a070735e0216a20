package vfstest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// RunDirMutationTests checks the ReadDir cookie rule on a directory that
// changes while it is listed: an entry that is not removed is returned
// exactly once across a listing resumed from any cookie the backend
// issued. For each size in sizes it fills a directory and lists it in
// small pages while, between pages, it
//
//   - RemoveSeen: removes every entry already listed (what `rm -rf` does),
//     then checks the directory is empty;
//   - RemoveUnseen: removes entries not listed yet, which must then not
//     appear;
//   - Add: creates new entries;
//   - Rename: renames listed and unlisted entries to new names;
//   - ResumeOld: after a whole listing and the removal of half the
//     entries, resumes from a cookie of the middle of the first listing
//     and gets exactly the survivors that came after it;
//   - Churn: all of the changes above at once, in one listing over one
//     filled directory (so that large sizes pay for one fill): it renames
//     one entry of each page and removes the rest of it (rm -rf in
//     batches), removes and renames entries not listed yet and adds new
//     ones, then checks that the directory is empty once everything left
//     is removed.
//
// Every pattern also checks that no name is listed twice and that the
// listing ends. newFS returns a fresh FS per subtest; the suite closes it.
// Each subtest logs its duration (test -v) so slow backends can be sized.
func RunDirMutationTests(t *testing.T, newFS func(t *testing.T) vfs.FS, sizes ...int) {
	RunDirMutationPatterns(t, newFS, nil, sizes...)
}

// RunDirMutationPatterns is RunDirMutationTests limited to the patterns
// named in only (all of them when only is empty).
func RunDirMutationPatterns(t *testing.T, newFS func(t *testing.T) vfs.FS, only []string, sizes ...int) {
	for _, n := range sizes {
		for _, p := range mutationPatterns {
			if len(only) > 0 && !slices.Contains(only, p.name) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", p.name, n), func(t *testing.T) {
				fsys := newFS(t)
				t.Cleanup(func() {
					if err := fsys.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				})
				m := &mutator{checker: &checker{T: t, fs: fsys, root: fsys.Root()}, rng: rand.New(rand.NewPCG(uint64(n), 17))}
				// As RunFSTests: everything runs as owner, in a root
				// that owner owns.
				uid, gid := owner.UID, owner.GID
				m.ok(fsys.SetAttr(vfs.Cred{}, m.root, vfs.SetAttr{UID: &uid, GID: &gid}), "chown root to owner")
				start := time.Now()
				m.dir = m.mkdir(m.root, "d")
				m.names = make([]string, n)
				for i := range n {
					m.names[i] = mutationName(i)
					m.create(m.dir, m.names[i], 0o644)
				}
				filled := time.Since(start)
				p.fn(m)
				t.Logf("%d entries: filled in %v, pattern in %v (%d ReadDir calls)", n, filled.Round(time.Millisecond), (time.Since(start) - filled).Round(time.Millisecond), m.calls)
			})
		}
	}
}

var mutationPatterns = []struct {
	name string
	fn   func(m *mutator)
}{
	{"RemoveSeen", mutRemoveSeen},
	{"RemoveUnseen", mutRemoveUnseen},
	{"Add", mutAdd},
	{"Rename", mutRename},
	{"ResumeOld", mutResumeOld},
	{"Churn", mutChurn},
}

// mutationName is the i-th test name: lengths from 8 to about 200 bytes,
// as in source trees and generated file names, all distinct.
func mutationName(i int) string {
	return fmt.Sprintf("%06d-%s", i, strings.Repeat("n", (i*37)%193))
}

// mutator is one directory under test and the bookkeeping of a listing.
type mutator struct {
	*checker
	dir   vfs.Handle
	names []string
	rng   *rand.Rand
	calls int
}

// pageSize is the small page the patterns list with: many resumptions
// even for 50,000 entries, without making that test minutes long.
func pageSize(n int) int {
	if n > 10000 {
		return 97
	}
	return 13
}

// listing drives one listing from cookie 0 in pages, calling between
// after every page with the names of that page; it returns how often
// each name was listed. It fails when the listing does not end.
func (m *mutator) listing(page int, between func(seen []string)) map[string]int {
	m.Helper()
	return m.listFrom(0, 0, page, between)
}

func (m *mutator) listFrom(cookie, verf uint64, page int, between func(seen []string)) map[string]int {
	m.Helper()
	count := map[string]int{}
	limit := 4*len(m.names) + 1000
	known := verf != 0 // the verifier of the listing is known
	for range limit {
		m.calls++
		es, v, eof, err := m.fs.ReadDir(m.dir, cookie, verf, page)
		m.ok(err, fmt.Sprintf("readdir from cookie %#x", cookie))
		if known && v != verf {
			m.Fatalf("cookie verifier changed from %#x to %#x in the middle of a listing", verf, v)
		}
		verf, known = v, true
		if len(es) > page {
			m.Fatalf("readdir returned %d entries, asked for at most %d", len(es), page)
		}
		seen := make([]string, 0, len(es))
		for _, e := range es {
			count[e.Name]++
			if count[e.Name] == 2 {
				m.Errorf("%q listed twice", e.Name)
			}
			cookie = e.Cookie
			if e.Name != "." && e.Name != ".." {
				seen = append(seen, e.Name)
			}
		}
		if eof {
			return count
		}
		if len(es) == 0 {
			m.Fatalf("readdir: no entries and no eof")
		}
		if between != nil {
			between(seen)
		}
	}
	m.Fatalf("listing did not end after %d calls", limit)
	return nil
}

// exactlyOnce checks each of names was listed once in count.
func (m *mutator) exactlyOnce(count map[string]int, names map[string]bool, what string) {
	m.Helper()
	bad := 0
	for name := range names {
		if count[name] != 1 {
			if bad++; bad <= 5 {
				m.Errorf("%s %q listed %d times, want once", what, name, count[name])
			}
		}
	}
	if bad > 5 {
		m.Errorf("... %d %s entries in all not listed exactly once", bad, what)
	}
}

func (m *mutator) dots(count map[string]int) {
	m.Helper()
	if count["."] != 1 || count[".."] != 1 {
		m.Errorf(`"." listed %d times, ".." %d times`, count["."], count[".."])
	}
}

func set(names []string) map[string]bool {
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

func mutRemoveSeen(m *mutator) {
	count := m.listing(pageSize(len(m.names)), func(seen []string) {
		for _, name := range seen {
			m.ok(m.fs.Remove(owner, m.dir, name), "remove "+name)
		}
	})
	m.dots(count)
	m.exactlyOnce(count, set(m.names), "entry")
	// The last page was not removed by the callback.
	for name, k := range count {
		if name != "." && name != ".." && k > 0 {
			if err := m.fs.Remove(owner, m.dir, name); err != nil && !isNoent(err) {
				m.Errorf("remove %q: %v", name, err)
			}
		}
	}
	left := m.listing(1000, nil)
	if len(left) != 2 {
		m.Errorf("directory not empty after removing every listed entry: %d names left", len(left)-2)
	}
	m.ok(m.fs.Rmdir(owner, m.root, "d"), "rmdir of the emptied directory")
}

func isNoent(err error) bool {
	e, ok := vfs.ToErrno(err)
	return ok && e == 2 // ENOENT
}

func mutRemoveUnseen(m *mutator) {
	listed := map[string]bool{}
	removed := map[string]bool{}
	unseen := append([]string(nil), m.names...)
	count := m.listing(pageSize(len(m.names)), func(seen []string) {
		for _, name := range seen {
			listed[name] = true
			if removed[name] {
				m.Errorf("%q listed after it was removed", name)
			}
		}
		// Remove a few entries not listed yet, picked at random.
		kept := unseen[:0]
		for _, name := range unseen {
			if !listed[name] {
				kept = append(kept, name)
			}
		}
		unseen = kept
		for range min(3, len(unseen)/4) {
			i := m.rng.IntN(len(unseen))
			name := unseen[i]
			m.ok(m.fs.Remove(owner, m.dir, name), "remove "+name)
			removed[name] = true
			unseen[i] = unseen[len(unseen)-1]
			unseen = unseen[:len(unseen)-1]
		}
	})
	m.dots(count)
	survivors := map[string]bool{}
	for _, name := range m.names {
		if removed[name] {
			if count[name] != 0 {
				m.Errorf("%q listed though removed before it was reached", name)
			}
		} else {
			survivors[name] = true
		}
	}
	m.exactlyOnce(count, survivors, "surviving")
}

func mutAdd(m *mutator) {
	added := map[string]bool{}
	next := len(m.names)
	count := m.listing(pageSize(len(m.names)), func(seen []string) {
		for range (len(seen) + 1) / 2 {
			name := mutationName(next) + "-added"
			next++
			m.create(m.dir, name, 0o644)
			added[name] = true
		}
	})
	m.dots(count)
	orig := set(m.names)
	m.exactlyOnce(count, orig, "original")
	for name := range count {
		if name != "." && name != ".." && !added[name] && !orig[name] {
			m.Errorf("listed %q, which never existed", name)
		}
	}
}

func mutRename(m *mutator) {
	renamed := map[string]bool{} // old names
	newNames := map[string]bool{}
	listed := map[string]bool{}
	i := 0
	count := m.listing(pageSize(len(m.names)), func(seen []string) {
		for _, name := range seen {
			listed[name] = true
		}
		// Rename one listed entry and one not listed yet.
		var pick []string
		if len(seen) > 0 && !newNames[seen[0]] && !renamed[seen[0]] {
			pick = append(pick, seen[0])
		}
		for range 20 {
			name := m.names[m.rng.IntN(len(m.names))]
			if !listed[name] && !renamed[name] {
				pick = append(pick, name)
				break
			}
		}
		for _, old := range pick {
			to := fmt.Sprintf("renamed-%06d", i)
			i++
			m.ok(m.fs.Rename(owner, m.dir, old, m.dir, to), "rename "+old)
			renamed[old] = true
			newNames[to] = true
		}
	})
	m.dots(count)
	survivors := map[string]bool{}
	for _, name := range m.names {
		if !renamed[name] {
			survivors[name] = true
		}
	}
	m.exactlyOnce(count, survivors, "entry never renamed")
	orig := set(m.names)
	for name := range count {
		if name != "." && name != ".." && !newNames[name] && !orig[name] {
			m.Errorf("listed %q, which never existed", name)
		}
	}
}

func mutResumeOld(m *mutator) {
	type listed struct {
		name   string
		cookie uint64
	}
	var order []listed
	var cookie, verf uint64
	for {
		m.calls++
		es, v, eof, err := m.fs.ReadDir(m.dir, cookie, verf, pageSize(len(m.names)))
		m.ok(err, "readdir")
		verf = v
		for _, e := range es {
			order = append(order, listed{e.Name, e.Cookie})
			cookie = e.Cookie
		}
		if eof {
			break
		}
		if len(es) == 0 || len(order) > 2*len(m.names)+2 {
			m.Fatalf("first listing does not end")
		}
	}
	if len(order) != len(m.names)+2 {
		m.Fatalf("first listing: %d entries, want %d", len(order), len(m.names)+2)
	}
	// Remove every other entry, then resume from the cookie of the entry
	// in the middle of the first listing.
	removed := map[string]bool{}
	for i, name := range m.names {
		if i%2 == 1 {
			m.ok(m.fs.Remove(owner, m.dir, name), "remove "+name)
			removed[name] = true
		}
	}
	mid := len(order) / 2
	count := m.listFrom(order[mid].cookie, verf, pageSize(len(m.names)), nil)
	after := map[string]bool{}
	for _, e := range order[mid+1:] {
		if !removed[e.name] {
			after[e.name] = true
		}
	}
	m.exactlyOnce(count, after, "surviving entry after the resume point")
	for name := range count {
		if !after[name] {
			m.Errorf("resumed listing returned %q, which came before the resume point or was removed", name)
		}
	}
}

// mutChurn is every change of the other patterns in one listing. Between
// pages it renames the first original entry of the page just listed and
// removes every other entry of it, then removes up to three and renames
// one original entry not listed yet, and creates three new entries. An
// original entry neither removed nor renamed before it was listed must be
// listed exactly once, one removed or renamed before that never; a new
// or renamed-to name at most once; nothing else at all.
func mutChurn(m *mutator) {
	const perPage = 3
	listed := map[string]bool{}
	gone := map[string]bool{}  // originals removed or renamed before they were listed
	extra := map[string]bool{} // names added or renamed to
	unseen := append([]string(nil), m.names...)
	next, renames := len(m.names), 0
	rename := func(old string) {
		to := fmt.Sprintf("renamed-%06d-%s", renames, strings.Repeat("r", (renames*53)%150))
		renames++
		m.ok(m.fs.Rename(owner, m.dir, old, m.dir, to), "rename "+old)
		extra[to] = true
	}
	count := m.listing(pageSize(len(m.names)), func(seen []string) {
		renamedOne := false
		for _, name := range seen {
			listed[name] = true
			if !renamedOne && !extra[name] {
				renamedOne = true
				rename(name)
				continue
			}
			m.ok(m.fs.Remove(owner, m.dir, name), "remove "+name)
		}
		kept := unseen[:0]
		for _, name := range unseen {
			if !listed[name] {
				kept = append(kept, name)
			}
		}
		unseen = kept
		for k := range min(perPage+1, len(unseen)/4) {
			i := m.rng.IntN(len(unseen))
			name := unseen[i]
			if k == 0 {
				rename(name)
			} else {
				m.ok(m.fs.Remove(owner, m.dir, name), "remove "+name)
			}
			gone[name] = true
			unseen[i] = unseen[len(unseen)-1]
			unseen = unseen[:len(unseen)-1]
		}
		for range perPage {
			name := mutationName(next) + "-added"
			next++
			m.create(m.dir, name, 0o644)
			extra[name] = true
		}
	})
	m.dots(count)
	survivors := map[string]bool{}
	for _, name := range m.names {
		if gone[name] {
			if count[name] != 0 {
				m.Errorf("%q listed though removed or renamed before it was reached", name)
			}
		} else {
			survivors[name] = true
		}
	}
	m.exactlyOnce(count, survivors, "original")
	orig := set(m.names)
	for name := range count {
		if name != "." && name != ".." && !extra[name] && !orig[name] {
			m.Errorf("listed %q, which never existed", name)
		}
	}
	// What is left: the last page (the callback runs between pages), the
	// renamed entries and the new ones the listing did not reach.
	left := m.listing(1000, nil)
	for name := range left {
		if name != "." && name != ".." {
			m.ok(m.fs.Remove(owner, m.dir, name), "remove "+name)
		}
	}
	if after := m.listing(1000, nil); len(after) != 2 {
		m.Errorf("directory not empty after removing every entry left: %d names", len(after)-2)
	}
	m.ok(m.fs.Rmdir(owner, m.root, "d"), "rmdir of the emptied directory")
}
