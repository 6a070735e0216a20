package main

// service.go: what serve does for a service manager. Under systemd the
// journal stamps every line itself, so logs written to it carry no
// timestamp of their own and start with the syslog priority ("<6>"),
// which journald turns into the entry's PRIORITY; readiness, reloads and
// shutdown are reported with sd_notify(3) (go-systemd's daemon package).

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/daemon"
)

// Log formats of --log-format.
const (
	logAuto    = "auto"    // journal when stderr is the journal, else console
	logConsole = "console" // time, level, caller, message, fields
	logJournal = "journal" // "<N>" priority prefix, no time
	logJSON    = "json"    // one JSON object a line ("ts" dropped on the journal)
)

// stderrIsJournal says whether stderr is the journal stream systemd set
// up: JOURNAL_STREAM names its device and inode (systemd.exec(5)). A
// process whose stderr was redirected elsewhere, or a child that
// inherited the variable with another stderr, does not match.
// INVOCATION_ID alone says only that systemd started us, not where
// stderr goes, so it is not used.
func stderrIsJournal() bool {
	dev, ino, ok := strings.Cut(os.Getenv("JOURNAL_STREAM"), ":")
	if !ok {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstat(2, &st); err != nil {
		return false
	}
	return dev == strconv.FormatUint(uint64(st.Dev), 10) && ino == strconv.FormatUint(st.Ino, 10)
}

// syslogPriority is the sd-daemon(3) prefix for a zap level.
func syslogPriority(l zapcore.Level) string {
	switch {
	case l <= zapcore.DebugLevel:
		return "<7>"
	case l == zapcore.InfoLevel:
		return "<6>"
	case l == zapcore.WarnLevel:
		return "<4>"
	case l == zapcore.ErrorLevel:
		return "<3>"
	}
	return "<2>"
}

func newLogger(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	journal := stderrIsJournal()
	if format == logAuto {
		format = logConsole
		if journal {
			format = logJournal
		}
	}
	var cfg zap.Config
	switch format {
	case logJSON:
		cfg = zap.NewProductionConfig()
		if journal {
			cfg.EncoderConfig.TimeKey = zapcore.OmitKey
		}
	case logConsole, logJournal:
		cfg = zap.NewDevelopmentConfig()
		cfg.Development = false
		cfg.DisableStacktrace = true
		if format == logJournal {
			cfg.EncoderConfig.TimeKey = zapcore.OmitKey
			cfg.EncoderConfig.EncodeLevel = func(l zapcore.Level, enc zapcore.PrimitiveArrayEncoder) {
				enc.AppendString(syslogPriority(l) + l.CapitalString())
			}
		}
	default:
		return nil, fmt.Errorf("--log-format must be auto, console, journal or json, not %q", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil
	return cfg.Build()
}

// serviceNotifier sends daemon states to NOTIFY_SOCKET when the service
// manager set one (Type=notify), and is nil otherwise.
func serviceNotifier(log *zap.Logger) daemon.Notifier {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return nil
	}
	return func(state string) {
		if _, err := sddaemon.SdNotify(false, state); err != nil {
			log.Warn("sd_notify failed", zap.String("state", strings.SplitN(state, "\n", 2)[0]), zap.Error(err))
		}
	}
}
