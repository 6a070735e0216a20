package nsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// StateFile is the name of the status monitor's file in the state
// directory.
const StateFile = "nsm.json"

// Record is one monitored host as kept on disk: a lock holder of this
// server (Key is the lock manager's host key) or a host a local program
// asked to monitor with MON (Key "mon:" + name).
type Record struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	// Addr is the host's address, empty when only Name is known.
	Addr string `json:"addr,omitempty"`
	// Local is this server's address as the host reached it: status
	// notifications carry it as mon_name and leave from it.
	Local string `json:"local,omitempty"`
	// MON registrations: the local program to call back, and priv.
	MyID *MyID  `json:"my_id,omitempty"`
	Priv []byte `json:"priv,omitempty"`
}

// persisted is the file's content.
type persisted struct {
	State int32    `json:"state"`
	Hosts []Record `json:"hosts"`
}

// load reads the state file; a missing file is state 0 with no hosts.
func load(dir string) (persisted, error) {
	var p persisted
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("nsm: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("nsm: %s: %w", filepath.Join(dir, StateFile), err)
	}
	return p, nil
}

// removeStaleTemps deletes temporary files a save interrupted by a crash
// left behind (the state file itself is then still the previous one,
// whole); without this every such crash would leave one more.
func removeStaleTemps(dir string) error {
	stale, err := filepath.Glob(filepath.Join(dir, StateFile+".tmp*"))
	if err != nil {
		return fmt.Errorf("nsm: %w", err)
	}
	for _, f := range stale {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("nsm: removing a crashed write's %s: %w", f, err)
		}
	}
	return nil
}

// save writes p so that a crash at any point leaves either the old or
// the new file whole: a temporary file written and fsynced, renamed over
// the old one, and the directory fsynced so the rename is durable.
func save(dir string, p persisted) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	final := filepath.Join(dir, StateFile)
	tmp, err := os.CreateTemp(dir, StateFile+".tmp*")
	if err != nil {
		return fmt.Errorf("nsm: %w", err)
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("nsm: writing %s: %w", final, err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("nsm: writing %s: %w", final, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("nsm: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("nsm: fsync %s: %w", dir, err)
	}
	return nil
}
