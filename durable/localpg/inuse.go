package localpg

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrInUse means another PostgreSQL already runs on the data directory:
// a second rbd started on the same --data-dir.
var ErrInUse = errors.New("the data directory is in use")

// checkNotInUse refuses a cluster directory whose postmaster.pid names a
// live process, and says which: the server's pid and, when it can tell,
// the program that started it (the other rbd). Without this, the second
// postgres exits at once and all one learns is "exited during start",
// the reason being in a log. A stale pid file (the process is gone, after
// a crash) is left for postgres, which handles it.
func checkNotInUse(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return nil // no server, or none we can see: postgres decides
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	pid, err := strconv.Atoi(strings.TrimSpace(string(first)))
	if err != nil || pid <= 0 || !alive(pid) {
		return nil
	}
	who := fmt.Sprintf("PostgreSQL (pid %d)", pid)
	if ppid := parentOf(pid); ppid > 1 {
		if cmd := commandLine(ppid); cmd != "" {
			who += fmt.Sprintf(", started by %q (pid %d)", cmd, ppid)
		}
	}
	return fmt.Errorf("%w: %s runs on %s; stop it, or give this rbd another --data-dir", ErrInUse, who, dir)
}

// alive reports whether a process exists (signal 0 checks without
// sending; EPERM means it exists under another user).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// parentOf reads a process's parent from /proc; 0 when it cannot.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields start
	// after its closing parenthesis (state, then ppid).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// commandLine is a process's command line, its arguments joined by
// spaces, or "" when it cannot be read.
func commandLine(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
