package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// seqName is the sequential file in the working directory.
const seqName = "seq"

// fileName is the name of metadata file i.
func fileName(i int64) string { return fmt.Sprintf("f%06d", i) }

// verfCheck remembers the first write verifier and reports a change
// (a server restart that may have lost UNSTABLE data).
type verfCheck struct {
	mu   sync.Mutex
	set  bool
	verf [wire.WriteVerfSize]byte
}

func (v *verfCheck) check(got [wire.WriteVerfSize]byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.set {
		v.set, v.verf = true, got
		return nil
	}
	if got != v.verf {
		return fmt.Errorf("write verifier changed from %x to %x: the server restarted and may have lost UNSTABLE data", v.verf, got)
	}
	return nil
}

// seqWrite creates the file and writes Size bytes with UNSTABLE WRITEs of
// Block bytes, QD at a time, then COMMITs; the COMMIT is inside the timing.
func (s *session) seqWrite(ctx context.Context, ph *Phase) error {
	cr, err := s.nfs.Create(ctx, s.dir, seqName, wire.CreateHow{Mode: wire.Unchecked, Attr: wire.Sattr{
		Mode: wire.SetUint32{Set: true, V: 0o644}, Size: wire.SetUint64{Set: true, V: 0}}})
	if err != nil {
		return fmt.Errorf("CREATE %s: %w", seqName, err)
	}
	if s.file, err = handleOf(ctx, s.nfs, s.dir, seqName, cr.FH); err != nil {
		return err
	}
	m := s.startMeter(ph, s.cfg.Size, true)
	defer m.finish(ph)
	var next atomic.Int64
	var vc verfCheck
	block := int64(s.cfg.Block)
	pat := patternOf(s.cfg.Seed)
	err = parallel(ctx, s.cfg.QD, func(ctx context.Context, _ int) error {
		buf := make([]byte, block)
		for {
			off := next.Add(block) - block
			if off >= s.cfg.Size {
				return nil
			}
			b := buf[:min(block, s.cfg.Size-off)]
			pat.Fill(uint64(off), b)
			for len(b) > 0 {
				t := time.Now()
				res, err := s.nfs.Write(ctx, s.file, uint64(off), b, wire.Unstable)
				lat := time.Since(t)
				if err != nil {
					return fmt.Errorf("WRITE at %d: %w", off, err)
				}
				if err := vc.check(res.Verf); err != nil {
					return err
				}
				if res.Count == 0 || int(res.Count) > len(b) {
					return fmt.Errorf("WRITE at %d: server wrote %d of %d bytes", off, res.Count, len(b))
				}
				m.add(int64(res.Count), lat)
				off += int64(res.Count)
				b = b[res.Count:]
			}
		}
	})
	if err != nil {
		return err
	}
	t := time.Now()
	cm, err := s.nfs.Commit(ctx, s.file, 0, 0)
	if err != nil {
		return fmt.Errorf("COMMIT: %w", err)
	}
	m.busy.Add(int64(time.Since(t)))
	if err := vc.check(cm.Verf); err != nil {
		return fmt.Errorf("COMMIT: %w", err)
	}
	return nil
}

// readBuf returns a worker's reply buffer for READs of up to n bytes.
func readBuf(n int) []byte { return make([]byte, n+client.ReadOverhead) }

// readAt reads n bytes at off, following short reads, and verifies them.
// The replies are read into buf (from readBuf(n)), which the worker
// reuses for its next READ.
func (s *session) readAt(ctx context.Context, m *meter, pat *Pattern, off int64, n int, buf []byte) error {
	for n > 0 {
		t := time.Now()
		res, err := s.nfs.ReadInto(ctx, s.file, uint64(off), uint32(n), buf)
		lat := time.Since(t)
		if err != nil {
			return fmt.Errorf("READ at %d: %w", off, err)
		}
		got := len(res.Data)
		if got > n || (got == 0 && n > 0) {
			return fmt.Errorf("READ at %d: asked for %d bytes, got %d (eof %v)", off, n, got, res.EOF)
		}
		vt := time.Now()
		if err := pat.Verify(uint64(off), res.Data); err != nil {
			return err
		}
		m.verify.Add(int64(time.Since(vt)))
		m.add(int64(got), lat)
		off += int64(got)
		n -= got
	}
	return nil
}

// seqRead reads the file back in Block-sized READs, QD at a time.
func (s *session) seqRead(ctx context.Context, ph *Phase) error {
	m := s.startMeter(ph, s.cfg.Size, true)
	defer m.finish(ph)
	var next atomic.Int64
	block := int64(s.cfg.Block)
	pat := patternOf(s.cfg.Seed)
	return parallel(ctx, s.cfg.QD, func(ctx context.Context, _ int) error {
		buf := readBuf(int(block))
		for {
			off := next.Add(block) - block
			if off >= s.cfg.Size {
				return nil
			}
			if err := s.readAt(ctx, m, pat, off, int(min(block, s.cfg.Size-off)), buf); err != nil {
				return err
			}
		}
	})
}

// randRead issues RandBlock-sized READs at random aligned offsets, RandQD
// at a time, for RandDuration or RandOps reads.
func (s *session) randRead(ctx context.Context, ph *Phase) error {
	total := s.cfg.RandOps
	m := s.startMeter(ph, total, false)
	defer m.finish(ph)
	deadline := time.Now().Add(s.cfg.RandDuration)
	blocks := s.cfg.Size / int64(s.cfg.RandBlock)
	var issued atomic.Int64
	pat := patternOf(s.cfg.Seed)
	return parallel(ctx, s.cfg.RandQD, func(ctx context.Context, w int) error {
		rng := rand.New(rand.NewPCG(s.cfg.Seed, uint64(w)))
		buf := readBuf(s.cfg.RandBlock)
		for {
			if total > 0 {
				if issued.Add(1) > total {
					return nil
				}
			} else if time.Now().After(deadline) {
				return nil
			}
			off := rng.Int64N(blocks) * int64(s.cfg.RandBlock)
			if err := s.readAt(ctx, m, pat, off, s.cfg.RandBlock, buf); err != nil {
				return err
			}
		}
	})
}

// files runs op on every metadata file index, QD at a time.
func (s *session) files(ctx context.Context, ph *Phase, op func(ctx context.Context, name string) error) error {
	m := s.startMeter(ph, int64(s.cfg.Files), false)
	defer m.finish(ph)
	var next atomic.Int64
	return parallel(ctx, s.cfg.QD, func(ctx context.Context, _ int) error {
		for {
			i := next.Add(1) - 1
			if i >= int64(s.cfg.Files) {
				return nil
			}
			t := time.Now()
			if err := op(ctx, fileName(i)); err != nil {
				return err
			}
			m.add(0, time.Since(t))
		}
	})
}

func (s *session) create(ctx context.Context, ph *Phase) error {
	how := wire.CreateHow{Mode: wire.Guarded, Attr: wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o644}}}
	return s.files(ctx, ph, func(ctx context.Context, name string) error {
		if _, err := s.nfs.Create(ctx, s.dir, name, how); err != nil {
			return fmt.Errorf("CREATE %s: %w", name, err)
		}
		return nil
	})
}

// stat is a LOOKUP then a GETATTR of the handle it returned, as a client
// without a cached handle does for stat(2).
func (s *session) stat(ctx context.Context, ph *Phase) error {
	return s.files(ctx, ph, func(ctx context.Context, name string) error {
		lr, err := s.nfs.Lookup(ctx, s.dir, name)
		if err != nil {
			return fmt.Errorf("LOOKUP %s: %w", name, err)
		}
		ga, err := s.nfs.Getattr(ctx, lr.FH)
		if err != nil {
			return fmt.Errorf("GETATTR %s: %w", name, err)
		}
		if ga.Attr.Type != wire.TypeReg || ga.Attr.Size != 0 {
			return fmt.Errorf("GETATTR %s: type %v size %d, want an empty regular file", name, ga.Attr.Type, ga.Attr.Size)
		}
		return nil
	})
}

func (s *session) remove(ctx context.Context, ph *Phase) error {
	return s.files(ctx, ph, func(ctx context.Context, name string) error {
		if _, err := s.nfs.Remove(ctx, s.dir, name); err != nil {
			return fmt.Errorf("REMOVE %s: %w", name, err)
		}
		return nil
	})
}
