package main

import (
	"io"
	"log/slog"
	"os"

	"github.com/runbookdev/runbook/cmd/internal/cli"
)

// logFlags choose the log's format and level.
type logFlags struct {
	format *cli.ChoiceFlag
	level  *cli.ChoiceFlag
}

func (l *logFlags) register(fs *cli.EnvFlags) {
	l.format = cli.Choice("auto", "auto", "text", "json")
	fs.Var(l.format, "log-format", "log format: auto (text on a terminal, JSON otherwise), text or json")
	fs.Env("log-format", "RBD_LOG_FORMAT")
	l.level = cli.Choice("info", "debug", "info", "warn", "error")
	fs.Var(l.level, "log-level", "least severe level logged: debug, info, warn or error")
	fs.Env("log-level", "RBD_LOG_LEVEL")
}

// logger makes the daemon's structured logger, writing to w.
func (l *logFlags) logger(w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(l.level.Value))
	opts := &slog.HandlerOptions{Level: level}
	format := l.format.Value
	if format == "auto" {
		format = "json"
		if isTerminal(w) {
			format = "text"
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// isTerminal reports whether w is a character device: a person watching.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
