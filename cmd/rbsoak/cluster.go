package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runbookdev/runbook/durable/localpg"
)

// cluster is what the soak runs: a PostgreSQL server of its own, rbd
// workers, and one rbd that only serves the API (and receives the
// webhooks), all real processes.
type cluster struct {
	o       options
	dir     string // scratch: the cluster, the verbs, the secrets
	logDir  string // every process's output
	pg      *localpg.Server
	url     string
	verbs   string // the verbs directory
	token   string
	secret  []byte
	api     *daemon
	workers []*daemon
	flags   []string // flags every rbd gets

	mu      sync.Mutex
	crashes []string // daemons that exited without being told to
}

func (c *cluster) unexpected(what string) {
	logf("%s", what)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashes = append(c.crashes, what)
}

// daemon is one rbd serve process, restarted under the same name and
// address after each fault.
type daemon struct {
	name   string
	addr   string
	args   []string
	logs   *os.File
	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	starts int
	peak   int64 // the largest RSS sampled, bytes
	// expectExit is set when rbsoak signals the daemon: any other exit is
	// a crash, and a violation.
	expectExit atomic.Bool
}

func startCluster(ctx context.Context, o options, dir string) (*cluster, error) {
	c := &cluster{o: o, dir: dir, logDir: filepath.Join(dir, "logs"), token: "soak-token", secret: []byte("soak-webhook-secret")}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, err
	}
	if o.databaseURL != "" {
		logf("soaking on the PostgreSQL of --database-url")
		c.url = o.databaseURL
		return c, nil
	}
	pgLog, err := os.Create(filepath.Join(c.logDir, "postgres.log"))
	if err != nil {
		return nil, err
	}
	logf("starting PostgreSQL in %s", dir)
	c.pg, err = localpg.Start(ctx, localpg.Options{Dir: filepath.Join(dir, "pg"), Log: pgLog,
		Settings: map[string]string{"max_connections": "200"}})
	if err != nil {
		return nil, err
	}
	c.url = c.pg.URL("postgres")
	return c, nil
}

// startDaemons writes the secrets and starts the API daemon and the
// workers, each on its own port.
func (c *cluster) startDaemons(ctx context.Context, verbsDir string) error {
	c.verbs = verbsDir
	tokenFile := filepath.Join(c.dir, "tokens")
	secretFile := filepath.Join(c.dir, "webhook-secrets")
	if err := os.WriteFile(tokenFile, []byte(c.token+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(secretFile, append(c.secret, '\n'), 0o600); err != nil {
		return err
	}
	// The soak's effects run unattended by their tag: without a policy
	// only read_only steps would (docs/reference/policy.md).
	policyFile := filepath.Join(c.dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("default:\n  auto_exec: [read_only, soak_effect]\n"), 0o600); err != nil {
		return err
	}
	apiAddr, err := freeAddr()
	if err != nil {
		return err
	}
	// Short leases and sweeps: a killed worker's steps come back within
	// seconds, so a soak of minutes sees many reclaims.
	c.flags = []string{
		"--verbs", verbsDir, "--database-url", c.url, "--log-format", "json", "--ui=false",
		"--api-token-file", tokenFile, "--webhook-secret-file", secretFile, "--policy", policyFile,
		"--callback-url", "http://" + apiAddr + "/v1/notifications",
		"--lease-ttl", "5s", "--sweep-interval", "1s", "--shutdown-grace", "3s",
	}
	c.api = &daemon{name: "api", addr: apiAddr, args: append([]string{"--worker=false"}, c.flags...)}
	if err := c.start(ctx, c.api); err != nil {
		return err
	}
	for i := range c.o.workers {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		// No --worker-id: a restarted worker is a new worker, as in a
		// deployment (host-pid-random), and the dead one's leases are left
		// to expire.
		w := &daemon{name: fmt.Sprintf("worker%d", i+1), addr: addr, args: c.flags}
		if err := c.start(ctx, w); err != nil {
			return err
		}
		c.workers = append(c.workers, w)
	}
	return nil
}

// start runs the daemon's process and waits until it answers /readyz.
func (c *cluster) start(ctx context.Context, d *daemon) error {
	d.mu.Lock()
	if d.logs == nil {
		f, err := os.Create(filepath.Join(c.logDir, d.name+".log"))
		if err != nil {
			d.mu.Unlock()
			return err
		}
		d.logs = f
	}
	args := append([]string{"serve", "--listen", d.addr}, d.args...)
	cmd := exec.Command(c.o.rbd, args...)
	cmd.Stdout, cmd.Stderr = d.logs, d.logs
	// Its own process group: a Ctrl-C at the terminal is rbsoak's to
	// handle. The parent-death signal ends the daemon if rbsoak dies; Linux
	// sends it when the thread that started the child exits, so the child
	// is started from a goroutine locked to its thread, which ends only
	// once the child has. (Started from any thread, a daemon was killed
	// when the thread that had started it ended: localpg's goroutine that
	// runs PostgreSQL locks a thread and lets it exit at each restart.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	done, started := make(chan struct{}), make(chan error, 1)
	d.expectExit.Store(false)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread ends with the child
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		if !d.expectExit.Load() {
			c.unexpected(fmt.Sprintf("%s (pid %d) exited on its own: %v", d.name, cmd.Process.Pid, err))
		}
		close(done)
	}()
	if err := <-started; err != nil {
		d.mu.Unlock()
		return err
	}
	d.cmd, d.done = cmd, done
	d.starts++
	d.mu.Unlock()
	return d.waitReady(ctx, 2*time.Minute)
}

func (d *daemon) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: time.Second}
	for {
		d.mu.Lock()
		done := d.done
		d.mu.Unlock()
		select {
		case <-done:
			return fmt.Errorf("%s exited while starting", d.name)
		default:
		}
		resp, err := hc.Get("http://" + d.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not ready within %s", d.name, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// signal sends sig to the daemon and, when wait, waits for it to exit.
func (d *daemon) signal(sig syscall.Signal, wait time.Duration) error {
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.mu.Unlock()
	d.expectExit.Store(true)
	if err := cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not exit within %s of %s and was killed", d.name, wait, sig)
	}
}

// running reports whether the process is alive.
func (d *daemon) running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// rss samples the resident set size from /proc, in bytes, and keeps the
// peak.
func (d *daemon) rss() (int64, error) {
	d.mu.Lock()
	pid := d.cmd.Process.Pid
	d.mu.Unlock()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				d.mu.Lock()
				d.peak = max(d.peak, kb*1024)
				d.mu.Unlock()
			}
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// stop ends every daemon with SIGTERM and then the server.
func (c *cluster) stop() {
	for _, d := range append([]*daemon{c.api}, c.workers...) {
		if d != nil && d.cmd != nil && d.running() {
			if err := d.signal(syscall.SIGTERM, 30*time.Second); err != nil {
				logf("%v", err)
			}
		}
		if d != nil && d.logs != nil {
			d.logs.Close()
		}
	}
	if c.pg != nil {
		if err := c.pg.Stop(); err != nil {
			logf("stopping PostgreSQL: %v", err)
		}
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
