// Command treemake creates the directories that the kernel-VM lab's rm -rf
// rows (conformance/kernel/guest/rows_rmrf.sh, issue 17) remove: a flat
// directory of many long names, or a deep tree, made through an NFS mount
// by several creators at once. One shell writer made 2,500 names in 44-195 s
// under emulation, most of it a process per file and one call in flight;
// here each creator is a goroutine issuing open(O_CREAT|O_TRUNC), as the
// shell's `: >file` does (the 6.1 client sends a LOOKUP and a CREATE for
// it; O_EXCL would be an EXCLUSIVE CREATE and a SETATTR), and mkdir one
// after the other, so T creators keep up to T calls in flight. It is
// built on the host as a static binary (CGO_ENABLED=0) and runs in the
// client guest.
//
//	treemake flat DIR N THREADS
//	    DIR (made, must not exist) holding N empty files named
//	    "%06d-" + 190 zeros (197 bytes), I = 0..N-1
//	treemake tree DIR DEPTH WIDTH FILES THREADS
//	    DIR (made, must not exist) is level 0; each of levels 1..DEPTH has
//	    WIDTH directories "dLL-W" inside the first directory of the level
//	    above (so the tree is DEPTH deep), and every directory, DIR too,
//	    holds FILES empty files named "f-III-" + 40 zeros
//
// Output: one line "created E entries (D directories, F files) in S s"
// where E counts what it made below DIR (DIR itself not included), the
// figure `find DIR | wc -l` minus one must then show. Exit status 1 when a
// create failed (the first error is printed), 2 on a usage error.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func usage() int {
	fmt.Fprintln(os.Stderr, "usage: treemake flat DIR N THREADS | treemake tree DIR DEPTH WIDTH FILES THREADS")
	return 2
}

// counts parses positive integers (at most max each).
func counts(args []string, max int) ([]int, bool) {
	out := make([]int, len(args))
	for i, a := range args {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 || n > max {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

func run(args []string) int {
	if len(args) < 1 {
		return usage()
	}
	var p plan
	switch {
	case args[0] == "flat" && len(args) == 4:
		n, ok := counts(args[2:], 10_000_000)
		if !ok {
			return usage()
		}
		p = flatPlan(args[1], n[0])
		p.threads = n[1]
	case args[0] == "tree" && len(args) == 6:
		n, ok := counts(args[2:], 100_000)
		if !ok || n[0] > 200 {
			return usage()
		}
		p = treePlan(args[1], n[0], n[1], n[2])
		p.threads = n[3]
	default:
		return usage()
	}
	t0 := time.Now()
	if err := p.make(); err != nil {
		fmt.Fprintln(os.Stderr, "treemake:", err)
		return 1
	}
	fmt.Printf("created %d entries (%d directories, %d files) in %.1f s\n",
		p.dirs()+len(p.files)-1, p.dirs()-1, len(p.files), time.Since(t0).Seconds())
	return 0
}

// plan is what to make: directories level by level (levels[0] is the
// top alone; a level's directories are inside those of the level above),
// then files, each inside one of the directories.
type plan struct {
	levels  [][]string
	files   []string
	threads int
}

// dirs counts the directories of the plan, the top included.
func (p *plan) dirs() int {
	n := 0
	for _, l := range p.levels {
		n += len(l)
	}
	return n
}

// FlatName is entry i's 197-byte name in a flat directory (the shell
// rows' rmrf_name makes the same names on the server).
func FlatName(i int) string {
	return fmt.Sprintf("%06d-%0190d", i, 0)
}

func flatPlan(dir string, n int) plan {
	p := plan{levels: [][]string{{dir}}, files: make([]string, n)}
	for i := range p.files {
		p.files[i] = filepath.Join(dir, FlatName(i))
	}
	return p
}

func treePlan(top string, depth, width, files int) plan {
	p := plan{levels: [][]string{{top}}}
	for l := 1; l <= depth; l++ {
		parent := p.levels[l-1][0]
		level := make([]string, width)
		for w := range level {
			level[w] = filepath.Join(parent, fmt.Sprintf("d%02d-%d", l, w))
		}
		p.levels = append(p.levels, level)
	}
	for _, level := range p.levels {
		for _, d := range level {
			for i := 0; i < files; i++ {
				p.files = append(p.files, filepath.Join(d, fmt.Sprintf("f-%03d-%040d", i, 0)))
			}
		}
	}
	return p
}

// make creates the top directory, then the other levels in order (a
// directory's parent is made before it), then the files, each stage by
// p.threads creators taking the next path from a shared counter.
func (p *plan) make() error {
	if err := os.Mkdir(p.levels[0][0], 0o755); err != nil {
		return err
	}
	for _, level := range p.levels[1:] {
		if err := parallel(level, p.threads, mkdir); err != nil {
			return err
		}
	}
	return parallel(p.files, p.threads, create)
}

func mkdir(path string) error { return os.Mkdir(path, 0o755) }

// create makes an empty file (a lost create shows as an error or as a
// wrong count under the top; the names are distinct).
func create(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// parallel runs do on every path with up to threads at once; the first
// error stops the others taking new paths and is returned.
func parallel(paths []string, threads int, do func(string) error) error {
	if threads > len(paths) {
		threads = len(paths)
	}
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(paths) {
					return
				}
				if err := do(paths[i]); err != nil {
					errs[t] = err
					failed.Store(true)
					return
				}
			}
		}(t)
	}
	wg.Wait()
	return errors.Join(errs...)
}
