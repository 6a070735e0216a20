package main

// client.go: the client commands (ls, cat, stat, cp, mkdir, rm, mv, df)
// over the nfsclient library. Remote paths are nfs:// URLs (see
// nfsclient.ParseURL); anything else is a local path. Exit codes, for
// scripts: 0 success, 1 other failure, 2 usage error, 3 no such file or
// directory, 4 permission denied, 5 already exists or not empty, 6
// server unreachable or export not mountable.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/nfsclient"
)

// Exit codes of the client commands.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotExist = 3
	exitPerm     = 4
	exitExist    = 5
	exitConnect  = 6
)

func clientCommands() []*cli.Command {
	jsonFlag := &cli.BoolFlag{Name: "json", Usage: "print JSON instead of text"}
	return []*cli.Command{
		{
			Name: "ls", Usage: "list remote directories", ArgsUsage: "nfs://SERVER/EXPORT[/PATH]...",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "l", Usage: "long listing: mode, links, owner, group, size, modification time"},
				&cli.BoolFlag{Name: "R", Usage: "list subdirectories recursively"},
				jsonFlag,
			},
			Action: clientAction(runLs),
		},
		{Name: "cat", Usage: "write remote files to standard output", ArgsUsage: "nfs://... ...", Action: clientAction(runCat)},
		{Name: "stat", Usage: "show attributes of remote files", ArgsUsage: "nfs://... ...", Flags: []cli.Flag{jsonFlag}, Action: clientAction(runStat)},
		{
			Name: "cp", Usage: "copy files local to remote, remote to local or remote to remote", ArgsUsage: "SRC... DST",
			Description: "Each of SRC and DST is a local path or an nfs:// URL. With several SRC, or a DST that is an " +
				"existing directory or ends in /, files are copied into DST. READs and WRITEs are pipelined: -P of them " +
				"in flight, --block bytes each. A progress bar is drawn on a terminal; the bytes copied and the " +
				"throughput are printed at the end.",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "r", Usage: "copy directories recursively"},
				&cli.IntFlag{Name: "P", Usage: "READs/WRITEs in flight per file (default: the URL's depth=, else 8)"},
				&cli.StringFlag{Name: "block", Usage: "READ/WRITE `SIZE`, e.g. 1M (default: the URL's bs=, else the server's preferred size)"},
				&cli.BoolFlag{Name: "q", Usage: "no progress bar and no summary"},
			},
			Action: clientAction(runCp),
		},
		{
			Name: "mkdir", Usage: "make remote directories", ArgsUsage: "nfs://... ...",
			Flags:  []cli.Flag{&cli.BoolFlag{Name: "p", Usage: "make parents as needed; existing directories are fine"}},
			Action: clientAction(runMkdir),
		},
		{
			Name: "rm", Usage: "remove remote files", ArgsUsage: "nfs://... ...",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "r", Usage: "remove directories and their contents"},
				&cli.BoolFlag{Name: "f", Usage: "ignore missing files"},
			},
			Action: clientAction(runRm),
		},
		{Name: "mv", Usage: "rename a remote file within one export", ArgsUsage: "nfs://SRC nfs://DST", Action: clientAction(runMv)},
		{Name: "df", Usage: "show space and files of remote file systems", ArgsUsage: "nfs://... ...", Flags: []cli.Flag{jsonFlag}, Action: clientAction(runDf)},
	}
}

// session holds the mounts of one command, one per server and export.
type session struct {
	ctx    context.Context
	mounts map[string]*nfsclient.FS
	depth  int
	block  int
	out    io.Writer
	errOut io.Writer
}

func clientAction(run func(*session, *cli.Command) error) cli.ActionFunc {
	return func(ctx context.Context, c *cli.Command) error {
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		s := &session{ctx: ctx, mounts: map[string]*nfsclient.FS{}, out: c.Root().Writer, errOut: c.Root().ErrWriter}
		if s.errOut == nil {
			s.errOut = os.Stderr
		}
		defer func() {
			for _, f := range s.mounts {
				f.Close()
			}
		}()
		err := run(s, c)
		if err == nil {
			return nil
		}
		return cli.Exit("gonfsrdma "+c.Name+": "+err.Error(), exitCode(err))
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

type connectError struct{ err error }

func (e connectError) Error() string { return e.err.Error() }
func (e connectError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ue usageError
	var ce connectError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ce):
		return exitConnect
	case errors.Is(err, fs.ErrNotExist):
		return exitNotExist
	case errors.Is(err, fs.ErrPermission):
		return exitPerm
	case errors.Is(err, fs.ErrExist):
		return exitExist
	}
	return exitFailure
}

func isRemote(arg string) bool { return strings.HasPrefix(arg, "nfs://") }

// forEachRemote checks that c has at least one argument, all nfs://
// URLs, and runs do on each in turn with the mounted FS and the path below
// the export, stopping at the first error.
func forEachRemote(s *session, c *cli.Command, do func(arg string, f *nfsclient.FS, p string) error) error {
	if err := needArgs(c, 1); err != nil {
		return err
	}
	for _, arg := range c.Args().Slice() {
		f, p, err := s.remote(arg)
		if err != nil {
			return err
		}
		if err := do(arg, f, p); err != nil {
			return err
		}
	}
	return nil
}

// lstat is remote, with the file's information (of a symbolic link
// itself, not its target).
func (s *session) lstat(rawURL string) (*nfsclient.FS, string, fs.FileInfo, error) {
	f, p, err := s.remote(rawURL)
	if err != nil {
		return nil, "", nil, err
	}
	fi, err := f.Lstat(p)
	if err != nil {
		return nil, "", nil, err
	}
	return f, p, fi, nil
}

// remote mounts the export of rawURL (once per session) and returns the
// FS and the path below the export.
func (s *session) remote(rawURL string) (*nfsclient.FS, string, error) {
	cfg, err := nfsclient.ParseURL(rawURL)
	if err != nil {
		return nil, "", usageError{err.Error()}
	}
	if s.depth > 0 {
		cfg.Depth = s.depth
	}
	if s.block > 0 {
		cfg.BlockSize = s.block
	}
	for key, f := range s.mounts {
		if strings.HasPrefix(key, sessionKey(cfg)) {
			exp := f.Export()
			if cfg.Path == exp || strings.HasPrefix(cfg.Path, strings.TrimSuffix(exp, "/")+"/") {
				return f, relPath(strings.TrimPrefix(cfg.Path, exp)), nil
			}
		}
	}
	f, err := nfsclient.DialConfig(s.ctx, cfg)
	if err != nil {
		return nil, "", connectError{err}
	}
	s.mounts[sessionKey(cfg)+f.Export()] = f
	return f, relPath(f.Subpath()), nil
}

// sessionKey identifies a server and connection options (not the path).
func sessionKey(cfg nfsclient.Config) string {
	c := cfg
	c.Path = ""
	return fmt.Sprintf("%s|%d|%d|%d|%v|", c.String(), c.UID, c.GID, c.NConnect, c.GIDs)
}

func relPath(p string) string {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

func needArgs(c *cli.Command, n int) error {
	if c.NArg() < n {
		return usageError{fmt.Sprintf("needs at least %d argument(s); see gonfsrdma %s --help", n, c.Name)}
	}
	for _, a := range c.Args().Slice() {
		if c.Name != "cp" && !isRemote(a) {
			return usageError{fmt.Sprintf("%q is not an nfs:// URL", a)}
		}
	}
	return nil
}

// entryJSON is the --json form of a file's attributes (fattr3).
type entryJSON struct {
	Path   string `json:"path"`
	Name   string `json:"name"`
	Type   string `json:"type"`
	Mode   string `json:"mode"`
	Perm   uint32 `json:"perm"`
	Size   int64  `json:"size"`
	Used   uint64 `json:"used"`
	Nlink  uint32 `json:"nlink"`
	UID    uint32 `json:"uid"`
	GID    uint32 `json:"gid"`
	FileID uint64 `json:"fileid"`
	MTime  string `json:"mtime"`
	ATime  string `json:"atime"`
	CTime  string `json:"ctime"`
	Target string `json:"target,omitempty"`
}

func typeName(t wire.FileType) string {
	switch t {
	case wire.TypeReg:
		return "file"
	case wire.TypeDir:
		return "dir"
	case wire.TypeLnk:
		return "symlink"
	case wire.TypeBlk:
		return "block"
	case wire.TypeChr:
		return "char"
	case wire.TypeSock:
		return "socket"
	case wire.TypeFIFO:
		return "fifo"
	}
	return "unknown"
}

func nfsTime(t wire.Time) string {
	return time.Unix(int64(t.Sec), int64(t.Nsec)).UTC().Format(time.RFC3339Nano)
}

func toJSON(f *nfsclient.FS, p string, fi fs.FileInfo) entryJSON {
	a := fi.Sys().(*wire.Fattr)
	e := entryJSON{Path: p, Name: fi.Name(), Type: typeName(a.Type), Mode: fi.Mode().String(), Perm: a.Mode & 0o7777,
		Size: fi.Size(), Used: a.Used, Nlink: a.Nlink, UID: a.UID, GID: a.GID, FileID: a.FileID,
		MTime: nfsTime(a.Mtime), ATime: nfsTime(a.Atime), CTime: nfsTime(a.Ctime)}
	if a.Type == wire.TypeLnk {
		e.Target, _ = f.Readlink(p)
	}
	return e
}

func longLine(f *nfsclient.FS, p string, fi fs.FileInfo) string {
	a := fi.Sys().(*wire.Fattr)
	name := fi.Name()
	if a.Type == wire.TypeLnk {
		if t, err := f.Readlink(p); err == nil {
			name += " -> " + t
		}
	}
	return fmt.Sprintf("%s %3d %5d %5d %12d %s %s", fi.Mode().String(), a.Nlink, a.UID, a.GID, fi.Size(),
		fi.ModTime().UTC().Format("2006-01-02 15:04"), name)
}

func runLs(s *session, c *cli.Command) error {
	if err := needArgs(c, 1); err != nil {
		return err
	}
	var all []entryJSON
	for i, arg := range c.Args().Slice() {
		f, p, fi, err := s.lstat(arg)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			if c.Bool("json") {
				all = append(all, toJSON(f, p, fi))
			} else if c.Bool("l") {
				fmt.Fprintln(s.out, longLine(f, p, fi))
			} else {
				fmt.Fprintln(s.out, fi.Name())
			}
			continue
		}
		var list func(dir string, header bool) error
		list = func(dir string, header bool) error {
			ents, err := f.ReadDir(dir)
			if err != nil {
				return err
			}
			if header && !c.Bool("json") {
				fmt.Fprintf(s.out, "%s:\n", dir)
			}
			var subdirs []string
			for _, e := range ents {
				ep := path.Join(dir, e.Name())
				info, err := e.Info()
				if err != nil {
					return err
				}
				switch {
				case c.Bool("json"):
					all = append(all, toJSON(f, ep, info))
				case c.Bool("l"):
					fmt.Fprintln(s.out, longLine(f, ep, info))
				default:
					fmt.Fprintln(s.out, e.Name())
				}
				if e.IsDir() {
					subdirs = append(subdirs, ep)
				}
			}
			if !c.Bool("R") {
				return nil
			}
			for _, d := range subdirs {
				if !c.Bool("json") {
					fmt.Fprintln(s.out)
				}
				if err := list(d, true); err != nil {
					return err
				}
			}
			return nil
		}
		if err := list(p, c.Bool("R") || c.NArg() > 1); err != nil {
			return err
		}
		if i < c.NArg()-1 && !c.Bool("json") {
			fmt.Fprintln(s.out)
		}
	}
	if c.Bool("json") {
		return writeJSON(s.out, all)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runCat(s *session, c *cli.Command) error {
	return forEachRemote(s, c, func(_ string, f *nfsclient.FS, p string) error {
		file, err := f.OpenFile(p, nfsclient.O_RDONLY, 0)
		if err != nil {
			return err
		}
		_, err = file.WriteTo(s.out)
		file.Close()
		return err
	})
}

func runStat(s *session, c *cli.Command) error {
	if err := needArgs(c, 1); err != nil {
		return err
	}
	var all []entryJSON
	for _, arg := range c.Args().Slice() {
		f, p, fi, err := s.lstat(arg)
		if err != nil {
			return err
		}
		e := toJSON(f, p, fi)
		if c.Bool("json") {
			all = append(all, e)
			continue
		}
		fmt.Fprintf(s.out, "  File: %s", arg)
		if e.Target != "" {
			fmt.Fprintf(s.out, " -> %s", e.Target)
		}
		fmt.Fprintf(s.out, "\n  Size: %d\tUsed: %d\tType: %s\n  Mode: %s (%04o)\tLinks: %d\tUid: %d\tGid: %d\tFileid: %d\n",
			e.Size, e.Used, e.Type, e.Mode, e.Perm, e.Nlink, e.UID, e.GID, e.FileID)
		fmt.Fprintf(s.out, "Access: %s\nModify: %s\nChange: %s\n", e.ATime, e.MTime, e.CTime)
	}
	if c.Bool("json") {
		return writeJSON(s.out, all)
	}
	return nil
}

func runMkdir(s *session, c *cli.Command) error {
	return forEachRemote(s, c, func(_ string, f *nfsclient.FS, p string) error {
		if c.Bool("p") {
			return f.MkdirAll(p, 0o777)
		}
		return f.Mkdir(p, 0o777)
	})
}

func runRm(s *session, c *cli.Command) error {
	return forEachRemote(s, c, func(arg string, f *nfsclient.FS, p string) error {
		if p == "." {
			return usageError{"refusing to remove the export's root"}
		}
		fi, err := f.Lstat(p)
		if err != nil {
			if c.Bool("f") && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if fi.IsDir() && !c.Bool("r") {
			return fmt.Errorf("%s: is a directory (use -r)", arg)
		}
		if c.Bool("r") {
			return f.RemoveAll(p)
		}
		return f.Remove(p)
	})
}

func runMv(s *session, c *cli.Command) error {
	if c.NArg() != 2 {
		return usageError{"mv needs exactly SRC and DST"}
	}
	if err := needArgs(c, 2); err != nil {
		return err
	}
	src, sp, err := s.remote(c.Args().Get(0))
	if err != nil {
		return err
	}
	dst, dp, err := s.remote(c.Args().Get(1))
	if err != nil {
		return err
	}
	if src != dst {
		return usageError{"mv works within one export of one server; use cp and rm across exports"}
	}
	if fi, err := dst.Stat(dp); err == nil && fi.IsDir() {
		dp = path.Join(dp, path.Base(sp))
	}
	return src.Rename(sp, dp)
}

// dfJSON is the --json form of FSSTAT.
type dfJSON struct {
	URL        string `json:"url"`
	Export     string `json:"export"`
	TotalBytes uint64 `json:"total_bytes"`
	FreeBytes  uint64 `json:"free_bytes"`
	AvailBytes uint64 `json:"avail_bytes"`
	UsedBytes  uint64 `json:"used_bytes"`
	TotalFiles uint64 `json:"total_files"`
	FreeFiles  uint64 `json:"free_files"`
	AvailFiles uint64 `json:"avail_files"`
}

func runDf(s *session, c *cli.Command) error {
	if err := needArgs(c, 1); err != nil {
		return err
	}
	var all []dfJSON
	if !c.Bool("json") {
		fmt.Fprintf(s.out, "%-40s %14s %14s %14s %5s %12s %12s\n", "Export", "Size", "Used", "Avail", "Use%", "Files", "FilesFree")
	}
	for _, arg := range c.Args().Slice() {
		f, p, err := s.remote(arg)
		if err != nil {
			return err
		}
		st, err := f.Statfs(p)
		if err != nil {
			return err
		}
		d := dfJSON{URL: arg, Export: f.Export(), TotalBytes: st.TotalBytes, FreeBytes: st.FreeBytes, AvailBytes: st.AvailBytes,
			UsedBytes: st.TotalBytes - min(st.FreeBytes, st.TotalBytes), TotalFiles: st.TotalFiles, FreeFiles: st.FreeFiles, AvailFiles: st.AvailFiles}
		if c.Bool("json") {
			all = append(all, d)
			continue
		}
		pct := 0.0
		if d.UsedBytes+d.AvailBytes > 0 {
			pct = 100 * float64(d.UsedBytes) / float64(d.UsedBytes+d.AvailBytes)
		}
		fmt.Fprintf(s.out, "%-40s %14d %14d %14d %4.0f%% %12d %12d\n", f.Export(), d.TotalBytes, d.UsedBytes, d.AvailBytes, pct, d.TotalFiles, d.FreeFiles)
	}
	if c.Bool("json") {
		return writeJSON(s.out, all)
	}
	return nil
}
