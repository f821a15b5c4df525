// Package localpg runs a PostgreSQL server from the binaries installed on
// the machine: a throwaway cluster for tests, or the persistent cluster
// that `rbd serve` starts when it is given no database URL.
//
// The server is a child process of the caller, listening only on a unix
// socket in a private directory, on a free port number. It is started with
// a parent-death signal, so it stops when the caller's process ends, even
// by kill -9: a crashed test run leaves no server behind.
//
// PostgreSQL refuses to run as root. When the caller is root, initdb and
// the server run as the `postgres` system user (Debian's package creates
// it), and the cluster directory is given to that user. They reach it
// through a file descriptor the caller opens and hands down
// (/proc/self/fd/3), not by its path: the directories above it need not let
// the postgres user through, so a cluster under a 0700 home directory or a
// 0700 data directory works as it does for any other user.
package localpg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options says where and how to run the server.
type Options struct {
	// Dir holds the cluster; it is created with initdb when it has no
	// PG_VERSION file. Required.
	Dir string
	// Settings are extra server settings (name → value), such as
	// fsync=off for a throwaway test cluster.
	Settings map[string]string
	// Log receives the server's output; nil discards it. The server also
	// always logs to Dir/server.log.
	Log *os.File
	// StartTimeout bounds how long Start waits for the server to accept
	// connections. Zero means 30 seconds.
	StartTimeout time.Duration
}

// Server is a running PostgreSQL server.
type Server struct {
	dir       string
	socketDir string
	port      int
	binDir    string
	cmd       *exec.Cmd
	exited    chan struct{}
	exitErr   error
	stopOnce  sync.Once
	release   func() // lets the goroutine that owns the child's thread return
	owner     *account
	opts      Options
	// attached is a server another process started (Attach): Stop
	// leaves it running.
	attached bool
}

// ErrNoBinaries means no PostgreSQL server binaries were found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found on PATH or under /usr/lib/postgresql/*/bin; " +
	"install them with: apt-get install -y postgresql (Debian, Ubuntu), dnf install postgresql-server (Fedora), " +
	"or brew install postgresql (macOS); or give a database URL")

// debianBinaries is where Debian's postgresql package installs the server.
var debianBinaries = "/usr/lib/postgresql/*/bin"

// FindBinaries returns the directory holding initdb and postgres: the one
// on PATH, or else the newest under /usr/lib/postgresql/*/bin, where
// Debian's package puts them, off PATH.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("postgres"); err == nil {
		dir := filepath.Dir(resolve(p))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(debianBinaries)
	sort.Slice(dirs, func(i, j int) bool { return majorVersion(dirs[i]) > majorVersion(dirs[j]) })
	for _, d := range dirs {
		if isFile(filepath.Join(d, "postgres")) && isFile(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func majorVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isFile(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir()
}

// Start initializes the cluster if needed and starts the server.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("localpg: Options.Dir is required")
	}
	binDir, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	owner, err := serverUser()
	if err != nil {
		return nil, err
	}
	// Nobody else need pass through the parents: a server run as another
	// user is handed the cluster (dataDir).
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("error creating cluster directory %q: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("error creating cluster directory %q: %w", dir, err)
	}
	if err := owner.own(dir); err != nil {
		return nil, err
	}
	if !isFile(filepath.Join(dir, "PG_VERSION")) {
		if err := initdb(ctx, binDir, dir, owner); err != nil {
			return nil, err
		}
	}
	if err := checkNotInUse(dir); err != nil {
		return nil, err
	}
	socketDir, err := os.MkdirTemp("", "rbd-pg-sock-")
	if err != nil {
		return nil, err
	}
	if err := owner.own(socketDir); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, socketDir: socketDir, port: port, binDir: binDir, exited: make(chan struct{}), owner: owner, opts: opts}
	if err := s.spawn(owner, opts); err != nil {
		os.RemoveAll(socketDir)
		return nil, err
	}
	if err := s.waitReady(ctx, s.startTimeout()); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if err := s.writeConnFile(); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("error recording how to reach the server: %w", err)
	}
	return s, nil
}

func (s *Server) startTimeout() time.Duration {
	if s.opts.StartTimeout == 0 {
		return 30 * time.Second
	}
	return s.opts.StartTimeout
}

// Restart crashes the server and starts it again, as `pg_ctl restart -m
// immediate` does: SIGQUIT ends every session at once without a
// checkpoint, so the new server runs crash recovery. It listens on the
// same socket and port, so connection strings stay valid. It is for
// fault-injection tests (`rbsoak`); it must not run beside Stop.
func (s *Server) Restart(ctx context.Context) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("localpg: the server is not running")
	}
	s.shutdown(syscall.SIGQUIT)
	s.release()
	s.exited = make(chan struct{})
	if err := s.spawn(s.owner, s.opts); err != nil {
		return err
	}
	if err := s.waitReady(ctx, s.startTimeout()); err != nil {
		return err
	}
	return s.writeConnFile()
}

// Pid is the postmaster's process id, which is also the process group of
// every server process (it is started with its own group): signalling
// -Pid reaches them all, as a test pausing the whole server with SIGSTOP
// needs.
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// initdb creates the cluster with trust authentication: the server listens
// only on a socket in a directory no one else can enter.
func initdb(ctx context.Context, binDir, dir string, owner *account) error {
	arg, handle, err := owner.dataDir(dir)
	if err != nil {
		return err
	}
	defer closeFile(handle)
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"-D", arg, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = owner.procAttr()
	if handle != nil {
		cmd.ExtraFiles = []*os.File{handle}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb %s failed: %w\n%s", dir, err, out)
	}
	return nil
}

// spawn starts postgres as a child with a parent-death signal. Linux sends
// that signal when the thread that started the child exits, so the child
// is started from a goroutine locked to its thread, which stays until Stop.
func (s *Server) spawn(owner *account, opts Options) error {
	dataArg, handle, err := owner.dataDir(s.dir)
	if err != nil {
		return err
	}
	sockArg, sockHandle, err := owner.handDown(s.socketDir, handedDownSocketDir)
	if err != nil {
		closeFile(handle)
		return err
	}
	handles := []*os.File{handle, sockHandle}
	args := []string{
		"-D", dataArg,
		"-p", strconv.Itoa(s.port),
		"-k", sockArg,
		"-c", "listen_addresses=",
		"-c", "logging_collector=off",
	}
	keys := make([]string, 0, len(opts.Settings))
	for k := range opts.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+opts.Settings[k])
	}
	logFile, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		closeFile(handles...)
		return fmt.Errorf("error opening server log: %w", err)
	}
	if err := owner.own(logFile.Name()); err != nil {
		closeFile(handles...)
		logFile.Close()
		return err
	}
	started := make(chan error, 1)
	done := make(chan struct{})
	s.release = func() { close(done) }
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		cmd := exec.Command(filepath.Join(s.binDir, "postgres"), args...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if opts.Log != nil {
			cmd.Stdout, cmd.Stderr = multiFile{logFile, opts.Log}, multiFile{logFile, opts.Log}
		}
		attr := owner.procAttr()
		if attr == nil {
			attr = &syscall.SysProcAttr{}
		}
		// SIGQUIT is an immediate shutdown: the next start runs crash
		// recovery, which a dead parent leaves no time to avoid.
		attr.Pdeathsig = syscall.SIGQUIT
		attr.Setpgid = true // a Ctrl-C in the terminal is the parent's to handle
		cmd.SysProcAttr = attr
		if handle != nil {
			cmd.ExtraFiles = handles // fds 3 and 4
		}
		err := cmd.Start()
		closeFile(handles...) // the server has its own
		if err != nil {
			logFile.Close()
			started <- fmt.Errorf("error starting postgres: %w", err)
			return
		}
		s.cmd = cmd
		started <- nil
		s.exitErr = cmd.Wait()
		logFile.Close()
		close(s.exited)
		<-done
	}()
	return <-started
}

type multiFile struct{ a, b *os.File }

func (m multiFile) Write(p []byte) (int, error) {
	if _, err := m.b.Write(p); err != nil {
		return 0, err
	}
	return m.a.Write(p)
}

// waitReady polls the socket until the server accepts connections.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	sock := filepath.Join(s.socketDir, fmt.Sprintf(".s.PGSQL.%d", s.port))
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited during start (%v); see %s", s.exitErr, filepath.Join(s.dir, "server.log"))
		default:
		}
		if conn, err := net.DialTimeout("unix", sock, time.Second); err == nil {
			conn.Close()
			if ready, _ := s.acceptsQueries(ctx); ready {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not become ready within %s; see %s", timeout, filepath.Join(s.dir, "server.log"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// acceptsQueries asks pg_isready, which knows the startup states in which
// the socket exists but connections are still refused.
func (s *Server) acceptsQueries(ctx context.Context) (bool, error) {
	isready := filepath.Join(s.binDir, "pg_isready")
	if !isFile(isready) {
		return true, nil // the socket answered; the connecting side retries
	}
	err := exec.CommandContext(ctx, isready, "-q", "-h", s.socketDir, "-p", strconv.Itoa(s.port), "-U", "postgres").Run()
	return err == nil, err
}

// URL is a connection string for database db on this server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&sslmode=disable", db, s.socketDir, s.port)
}

// Dir is the cluster directory.
func (s *Server) Dir() string { return s.dir }

// Stop shuts the server down (a fast shutdown: sessions are ended, the
// cluster is left clean) and waits for it to exit.
func (s *Server) Stop() error {
	if s.attached {
		return nil
	}
	var err error
	s.stopOnce.Do(func() {
		defer os.Remove(filepath.Join(s.dir, connFile))
		defer os.RemoveAll(s.socketDir)
		defer s.release()
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		if !s.shutdown(syscall.SIGINT) {
			err = errors.New("postgres did not stop within 30s and was killed")
		}
	})
	return err
}

// shutdown sends the postmaster sig (SIGINT a fast shutdown, SIGQUIT an
// immediate one) and waits for it to exit; false when it had to be killed
// after 30 seconds.
func (s *Server) shutdown(sig syscall.Signal) bool {
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
		return true
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return false
	}
}

// freePort asks the kernel for a port number no one is listening on. The
// server listens only on a unix socket, but the port number names it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// account is who runs the server: the current user, or postgres when the
// current user is root.
type account struct {
	uid, gid int
	switched bool
}

func serverUser() (*account, error) {
	if os.Geteuid() != 0 {
		return &account{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root, and PostgreSQL refuses to run as root: " +
			"create a postgres system user (Debian's postgresql package does) or run as another user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &account{uid: uid, gid: gid, switched: true}, nil
}

func (a *account) procAttr() *syscall.SysProcAttr {
	if !a.switched {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(a.gid)}}
}

// own gives path (and, for a directory, what is under it) to the server's
// user. The user need not be able to reach it by its path: the cluster
// is handed down as a file descriptor (dataDir), the socket directory is
// in the temporary directory, and the log is opened by the caller.
func (a *account) own(path string) error {
	if !a.switched {
		return nil
	}
	err := filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, a.uid, a.gid)
	})
	if err != nil {
		return fmt.Errorf("error giving %q to the postgres user: %w", path, err)
	}
	return nil
}

// handedDownSocketDir is where a server run as another user makes its
// socket: the fourth descriptor, the socket directory's, for the same
// reason (a TMPDIR the postgres user cannot pass through). Clients use
// its path.
const handedDownSocketDir = "/proc/self/fd/4"

// handedDownDir is where a server run as another user finds its cluster:
// the descriptor the caller opened, third after standard input, output
// and error (exec.Cmd's first ExtraFiles). Following it is Linux's
// "magic link": the kernel goes to the directory the descriptor holds,
// without searching the directories above it, which the postgres user may
// not be allowed to pass through (a clone under /root, a 0700 data
// directory, a umask of 077). initdb hands it on to the server it runs,
// and the server's processes, which it forks, keep it and work from it.
const handedDownDir = "/proc/self/fd/3"

// dataDir is the -D argument for initdb and the server: the cluster's
// path, or, when they run as another user, handedDownDir and the
// directory's descriptor to hand down (the caller closes it).
func (a *account) dataDir(dir string) (string, *os.File, error) {
	return a.handDown(dir, handedDownDir)
}

// handDown is the argument that names dir to initdb or the server: dir
// itself, or, when they run as another user, as, with dir's descriptor
// to hand down (the caller closes it).
func (a *account) handDown(dir, as string) (string, *os.File, error) {
	if !a.switched {
		return dir, nil, nil
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return "", nil, fmt.Errorf("error opening %q for the postgres user: %w", dir, err)
	}
	return as, f, nil
}

func closeFile(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}

// String describes the server for logs.
func (s *Server) String() string {
	return fmt.Sprintf("postgres %s on %s", strings.TrimPrefix(s.binDir, "/usr/lib/postgresql/"), s.URL("postgres"))
}

// SocketDir is the directory of the server's unix socket: the host of a
// connection string (a multi-host one lists several).
func (s *Server) SocketDir() string { return s.socketDir }

// Port is the port number that names the server's socket.
func (s *Server) Port() int { return s.port }

// BinDir is where the server's binaries are (pg_basebackup beside them).
func (s *Server) BinDir() string { return s.binDir }

// RunAs runs one of PostgreSQL's client programs (pg_basebackup, pg_ctl)
// from the server's binaries as the server's user, which pg_ctl needs
// when the caller is root. Its output comes back with its error.
func (s *Server) RunAs(ctx context.Context, program string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, program), args...)
	cmd.SysProcAttr = s.owner.procAttr()
	return cmd.CombinedOutput()
}
