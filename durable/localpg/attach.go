package localpg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNotRunning means no server runs on the cluster Attach was given.
var ErrNotRunning = errors.New("no PostgreSQL runs on the data directory")

// ErrNoCluster means the directory holds no cluster (no PG_VERSION): a
// server started there would be a new, empty one.
var ErrNoCluster = errors.New("no PostgreSQL cluster in the data directory")

// connFile is where a server started by Start says, in its cluster
// directory, how to reach it: its socket directory, its port and the
// postmaster's pid, one a line. postmaster.pid cannot say it: when the
// server runs as the postgres user, the socket directory it names is a
// handed-down descriptor (/proc/self/fd/4), meaningful only to it.
const connFile = "rbd-connection"

// HasCluster reports whether dir holds a PostgreSQL cluster.
func HasCluster(dir string) bool { return isFile(filepath.Join(dir, "PG_VERSION")) }

// writeConnFile records how to reach s, for Attach.
// The file is the server's user's, like every other file of the cluster:
// a root-owned file there is one the server cannot read, and
// pg_basebackup, which sends every file, fails on it.
func (s *Server) writeConnFile() error {
	body := fmt.Sprintf("%s\n%d\n%d\n", s.socketDir, s.port, s.Pid())
	path := filepath.Join(s.dir, connFile)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return err
	}
	return s.owner.own(path)
}

// Attach finds the server another process started with Start on the
// cluster in dir (a running rbd serve's) and returns it, to connect to
// beside that process: rbd prune runs so. Stop on it does nothing; the
// server stays its starter's. ErrNoCluster when dir holds no cluster,
// ErrNotRunning when no server runs on it.
func Attach(dir string) (*Server, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if !HasCluster(dir) {
		return nil, fmt.Errorf("%w: %s", ErrNoCluster, dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, connFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotRunning, dir)
	}
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		return nil, fmt.Errorf("%s: want 3 lines (socket directory, port, pid), got %d", filepath.Join(dir, connFile), len(lines))
	}
	port, perr := strconv.Atoi(lines[1])
	pid, derr := strconv.Atoi(lines[2])
	if perr != nil || derr != nil || pid <= 0 {
		return nil, fmt.Errorf("%s: malformed", filepath.Join(dir, connFile))
	}
	// The file outlives a server killed with its starter: the postmaster
	// it names must be the one postmaster.pid names, and alive.
	if running, ok := postmasterPid(dir); !ok || running != pid || !alive(pid) {
		return nil, fmt.Errorf("%w: %s", ErrNotRunning, dir)
	}
	if _, err := os.Stat(filepath.Join(lines[0], fmt.Sprintf(".s.PGSQL.%d", port))); err != nil {
		return nil, fmt.Errorf("%w: %s (its socket: %v)", ErrNotRunning, dir, err)
	}
	return &Server{dir: dir, socketDir: lines[0], port: port, attached: true}, nil
}

// postmasterPid is the pid on postmaster.pid's first line.
func postmasterPid(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	return pid, err == nil && pid > 0
}
