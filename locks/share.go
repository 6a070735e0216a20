package locks

// Share is a DOS share reservation (NLM SHARE): the opener's access and
// the access it denies others, as bit sets of ShareRead and ShareWrite.
type Share struct {
	Host   string
	OH     string
	Mode   uint32 // access denied to others (fsh4_mode)
	Access uint32 // access wanted (fsh4_access)
}

// Share access and deny bits (fsh4_access, fsh4_mode).
const (
	ShareRead  = 1
	ShareWrite = 2
)

// Share records s on file name unless another owner's reservation denies
// the access s wants or wants access s denies; an owner's second SHARE
// replaces its first. It returns Granted, Denied or NoLocks.
func (t *Table) Share(name string, s Share, open Opener) (Status, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, err := t.get(name, true, open)
	if err != nil {
		return Denied, err
	}
	defer t.tidy(name, f)
	mine := -1
	for i, o := range f.shares {
		if o.Host == s.Host && o.OH == s.OH {
			mine = i
			continue
		}
		if s.Access&o.Mode != 0 || s.Mode&o.Access != 0 {
			return Denied, nil
		}
	}
	if mine >= 0 {
		f.shares[mine] = s
		return Granted, nil
	}
	if t.count+1 > t.cfg.MaxLocks {
		return NoLocks, nil
	}
	f.shares = append(f.shares, s)
	t.count++
	return Granted, nil
}

// Unshare removes host and oh's reservation on file name, if any.
func (t *Table) Unshare(name, host, oh string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[name]
	if f == nil {
		return
	}
	defer t.tidy(name, f)
	for i, o := range f.shares {
		if o.Host == host && o.OH == oh {
			f.shares = append(f.shares[:i], f.shares[i+1:]...)
			t.count--
			return
		}
	}
}

// Shares returns a copy of file name's reservations.
func (t *Table) Shares(name string) []Share {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[name]
	if f == nil {
		return nil
	}
	return append([]Share(nil), f.shares...)
}
