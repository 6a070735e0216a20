package main

// cp.go: gonfsrdma cp. A copy is a list of jobs (directories to make,
// files to copy) built by walking the sources first, so the progress bar
// knows the total; files then stream with pipelined READs and WRITEs:
// local to remote through nfsclient.File.ReadFromAt (ReadFrom when the
// source is not a regular file), remote to local through File.WriteToAt
// (WriteTo when the target is not a regular file: a pipe, a terminal),
// remote to remote through ReadFromAt reading the source File by offset.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v3"

	"github.com/gonfsrdma/gonfsrdma/nfsclient"
)

// endpoint is a local path or a path in a mounted export.
type endpoint struct {
	fs   *nfsclient.FS // nil: local
	path string
	arg  string
}

func (e endpoint) remote() bool { return e.fs != nil }

func (e endpoint) String() string {
	if e.remote() {
		return "nfs:" + path.Join(e.fs.Export(), e.path)
	}
	return e.path
}

func (s *session) endpoint(arg string) (endpoint, error) {
	if !isRemote(arg) {
		return endpoint{path: arg, arg: arg}, nil
	}
	f, p, err := s.remote(arg)
	if err != nil {
		return endpoint{}, err
	}
	return endpoint{fs: f, path: p, arg: arg}, nil
}

func (e endpoint) stat() (fs.FileInfo, error) {
	if e.remote() {
		return e.fs.Stat(e.path)
	}
	return os.Stat(e.path)
}

func (e endpoint) join(name string) endpoint {
	if e.remote() {
		return endpoint{fs: e.fs, path: path.Join(e.path, name), arg: e.arg}
	}
	return endpoint{path: filepath.Join(e.path, name), arg: e.arg}
}

func (e endpoint) base() string {
	if e.remote() {
		return path.Base(e.path)
	}
	return filepath.Base(e.path)
}

func (e endpoint) readDir() ([]fs.DirEntry, error) {
	if e.remote() {
		return e.fs.ReadDir(e.path)
	}
	return os.ReadDir(e.path)
}

func (e endpoint) mkdirAll() error {
	if e.remote() {
		return e.fs.MkdirAll(e.path, 0o777)
	}
	return os.MkdirAll(e.path, 0o777)
}

type cpJob struct {
	src, dst endpoint
	dir      bool
	size     int64
	perm     fs.FileMode
}

func runCp(s *session, c *cli.Command) error {
	if c.NArg() < 2 {
		return usageError{"cp needs SRC... DST"}
	}
	s.depth = c.Int("P")
	if s.depth < 0 || s.depth > 256 {
		return usageError{"-P must be 1..256"}
	}
	if b := c.String("block"); b != "" {
		n, err := nfsclient.ParseSize(b)
		if err != nil || n < 4096 || n > 1<<20 {
			return usageError{fmt.Sprintf("--block %q: want 4K..1M", b)}
		}
		s.block = int(n)
	}
	args := c.Args().Slice()
	dstArg := args[len(args)-1]
	srcArgs := args[:len(args)-1]
	dst, err := s.endpoint(dstArg)
	if err != nil {
		return err
	}
	dstInfo, dstErr := dst.stat()
	intoDir := len(srcArgs) > 1 || strings.HasSuffix(dstArg, "/") || (dstErr == nil && dstInfo.IsDir())
	if len(srcArgs) > 1 && (dstErr != nil || !dstInfo.IsDir()) {
		return fmt.Errorf("target %s is not a directory", dstArg)
	}
	if dstErr != nil && !errors.Is(dstErr, fs.ErrNotExist) {
		return dstErr
	}
	var jobs []cpJob
	for _, a := range srcArgs {
		src, err := s.endpoint(a)
		if err != nil {
			return err
		}
		if !src.remote() && !dst.remote() {
			return usageError{"cp copies to or from an NFS server: one of SRC and DST must be an nfs:// URL"}
		}
		fi, err := src.stat()
		if err != nil {
			return err
		}
		target := dst
		if intoDir {
			target = dst.join(src.base())
		}
		if fi.IsDir() {
			if !c.Bool("r") {
				return fmt.Errorf("%s is a directory (use -r)", a)
			}
			if jobs, err = walkCopy(src, target, jobs); err != nil {
				return err
			}
			continue
		}
		jobs = append(jobs, cpJob{src: src, dst: target, size: fi.Size(), perm: fi.Mode().Perm()})
	}
	var total int64
	files := 0
	for _, j := range jobs {
		if !j.dir {
			total += j.size
			files++
		}
	}
	var bar *progressbar.ProgressBar
	if !c.Bool("q") && isTerminal(s.errOut) && total >= 1<<20 {
		bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(s.errOut), progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(),
			progressbar.OptionSetDescription("copying"))
	}
	start := time.Now()
	var copied int64
	for _, j := range jobs {
		if j.dir {
			if err := j.dst.mkdirAll(); err != nil {
				return err
			}
			continue
		}
		n, err := copyFile(s, j, bar)
		copied += n
		if err != nil {
			return fmt.Errorf("%s -> %s: %w", j.src, j.dst, err)
		}
	}
	if bar != nil {
		bar.Finish()
	}
	if !c.Bool("q") {
		el := time.Since(start)
		fmt.Fprintf(s.errOut, "copied %d file(s), %d bytes in %.3fs (%.1f MiB/s)\n", files, copied, el.Seconds(),
			float64(copied)/(1<<20)/max(el.Seconds(), 1e-9))
	}
	return nil
}

// walkCopy adds the jobs that copy directory src to dst.
func walkCopy(src, dst endpoint, jobs []cpJob) ([]cpJob, error) {
	jobs = append(jobs, cpJob{src: src, dst: dst, dir: true})
	ents, err := src.readDir()
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		s, d := src.join(e.Name()), dst.join(e.Name())
		switch {
		case info.IsDir():
			if jobs, err = walkCopy(s, d, jobs); err != nil {
				return nil, err
			}
		case info.Mode().IsRegular():
			jobs = append(jobs, cpJob{src: s, dst: d, size: info.Size(), perm: info.Mode().Perm()})
		default:
			// Symbolic links, devices, sockets and pipes are not
			// copied; say so rather than silently dropping them.
			return nil, fmt.Errorf("%s: %s is not a regular file or directory; cp -r copies only those", s, info.Mode().Type())
		}
	}
	return jobs, nil
}

// countWriter counts bytes into the progress bar.
type countWriter struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (c countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if c.bar != nil {
		c.bar.Add(n)
	}
	return n, err
}

// followWrites moves bar with the bytes f's WRITEs carry until stop(n),
// which leaves it n bytes past where it started (bar nil: nothing).
func followWrites(f *nfsclient.FS, bar *progressbar.ProgressBar) (stop func(n int64)) {
	return follow(bar, func() int64 { return f.Stats().BytesWritten })
}

// followReads is followWrites for the bytes f's READs bring.
func followReads(f *nfsclient.FS, bar *progressbar.ProgressBar) (stop func(n int64)) {
	return follow(bar, func() int64 { return f.Stats().BytesRead })
}

// follow moves bar with a growing byte count until stop(n).
func follow(bar *progressbar.ProgressBar, count func() int64) (stop func(n int64)) {
	if bar == nil {
		return func(int64) {}
	}
	base, w0 := bar.State().CurrentNum, count()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				bar.Set64(base + count() - w0)
			}
		}
	}()
	return func(n int64) {
		close(done)
		<-finished
		bar.Set64(base + n)
	}
}

// regular reports whether f is a regular file (offsets mean something:
// not a pipe, terminal or device).
func regular(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

type countReader struct {
	r   io.Reader
	bar *progressbar.ProgressBar
}

func (c countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.bar != nil {
		c.bar.Add(n)
	}
	return n, err
}

func copyFile(s *session, j cpJob, bar *progressbar.ProgressBar) (int64, error) {
	perm := j.perm
	if perm == 0 {
		perm = 0o644
	}
	switch {
	case !j.src.remote(): // local -> remote
		in, err := os.Open(j.src.path)
		if err != nil {
			return 0, err
		}
		defer in.Close()
		out, err := j.dst.fs.OpenFile(j.dst.path, nfsclient.O_WRONLY|nfsclient.O_CREATE|nfsclient.O_TRUNC, perm)
		if err != nil {
			return 0, err
		}
		var n int64
		if regular(in) {
			// Each WRITE's worker reads its own block: no copy kept
			// for a re-send, committed before ReadFromAt returns.
			// The *os.File itself: on TCP the library maps it and the
			// kernel copies from the page cache into the socket, so the
			// bar follows the WRITEs instead of the reads.
			stop := followWrites(j.dst.fs, bar)
			n, err = out.ReadFromAt(in, 0, -1)
			stop(n)
		} else {
			n, err = out.ReadFrom(countReader{in, bar})
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return n, err
	case !j.dst.remote(): // remote -> local
		in, err := j.src.fs.OpenFile(j.src.path, nfsclient.O_RDONLY, 0)
		if err != nil {
			return 0, err
		}
		defer in.Close()
		out, err := os.OpenFile(j.dst.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
		if err != nil {
			return 0, err
		}
		var n int64
		if regular(out) {
			// Each READ's worker writes its block where it belongs,
			// straight from the socket on TCP, from the registered
			// region on RDMA: the bar follows the READs, since no
			// WriteAt call sees the data.
			stop := followReads(j.src.fs, bar)
			n, err = in.WriteToAt(out, 0)
			stop(n)
		} else {
			n, err = in.WriteTo(countWriter{out, bar})
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return n, err
	default: // remote -> remote
		in, err := j.src.fs.OpenFile(j.src.path, nfsclient.O_RDONLY, 0)
		if err != nil {
			return 0, err
		}
		defer in.Close()
		out, err := j.dst.fs.OpenFile(j.dst.path, nfsclient.O_WRONLY|nfsclient.O_CREATE|nfsclient.O_TRUNC, perm)
		if err != nil {
			return 0, err
		}
		// The source File is an io.ReaderAt: each WRITE's worker READs
		// its own block, and a re-send READs it again.
		stop := followWrites(j.dst.fs, bar)
		n, err := out.ReadFromAt(in, 0, -1)
		stop(n)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return n, err
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
