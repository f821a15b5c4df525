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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/localpg"
)

// benchVerbs are what the measured runbooks call: a no-op sync step, the
// same declared pure (which runs inside the advance, without a lease:
// inline steps, docs/runtime.md), and a step that parks until notified.
const benchVerbs = `
- name: noop
  domain: b
  description: A no-op sync step (core.echo).
  execution: {kind: sync, handler: core.echo, side_effects: none}
- name: pure
  domain: b
  description: A no-op sync step declared pure, which rbd calls inside the advance.
  execution: {kind: sync, handler: core.echo, side_effects: none, determinism: pure}
- name: wait
  domain: b
  description: Parks until a notification arrives.
  execution:
    kind: durable
    handler: await.notification
    side_effects: none
    timeouts: {park_timeout: P7D}
`

// lab is the measuring setup: a PostgreSQL server, a scratch directory,
// and the binaries under test.
type lab struct {
	o     options
	dir   string
	verbs string
	pg    *localpg.Server
	// dataDir is the data directory of a server given with --database-url
	// when it is on this machine ("" otherwise): postgresCPU reads it.
	dataDir string
	url     string
	stats   *durable.Store // reads the database's counters
	schemas int

	// rbd's headline figures of this run on empty schemas, kept for the
	// rows that set River's and DBOS's beside them (sidebyside.go) and
	// the history's (history.go): steps/s by shape, resume p50 and p99.
	rbdStepsPerSecond          map[string]float64
	rbdResumeP50, rbdResumeP99 float64
}

func newLab(ctx context.Context, o options) (*lab, error) {
	dir, err := os.MkdirTemp("", "rbload-")
	if err != nil {
		return nil, err
	}
	// PostgreSQL may run as the postgres user, who must reach its data.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	l := &lab{o: o, dir: dir, url: o.databaseURL, rbdStepsPerSecond: map[string]float64{}}
	l.verbs = filepath.Join(dir, "verbs", "b.yaml")
	if err := os.MkdirAll(filepath.Dir(l.verbs), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(l.verbs, []byte(benchVerbs), 0o644); err != nil {
		return nil, err
	}
	if l.url == "" {
		logf("starting PostgreSQL (fsync and synchronous_commit on, as deployed) in %s", dir)
		l.pg, err = localpg.Start(ctx, localpg.Options{Dir: filepath.Join(dir, "pg"), Settings: map[string]string{"max_connections": "200"}})
		if err != nil {
			l.close()
			return nil, err
		}
		l.url = l.pg.URL("postgres")
	}
	l.stats, err = durable.Open(ctx, durable.Config{URL: l.url, MaxConns: 2})
	if err != nil {
		l.close()
		return nil, err
	}
	if l.pg == nil {
		// A server given with --database-url: its CPU is read too when it
		// runs on this machine and its postmaster.pid can be read.
		if dir, err := l.stats.DataDirectory(ctx); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); err == nil {
				l.dataDir = dir
			}
		}
	}
	return l, nil
}

func (l *lab) close() {
	if l.stats != nil {
		l.stats.Close()
	}
	if l.pg != nil {
		if err := l.pg.Stop(); err != nil {
			logf("stopping PostgreSQL: %v", err)
		}
	}
	os.RemoveAll(l.dir)
}

// schema names a fresh schema for one run; rbd creates it when it
// migrates.
func (l *lab) schema(what string) string {
	l.schemas++
	return fmt.Sprintf("bench_%s_%d_%d", what, os.Getpid(), l.schemas)
}

// daemon is a running rbd serve.
type daemon struct {
	cmd    *exec.Cmd
	server string
	logs   *logBuffer
	done   chan struct{}
	err    error
	client *client.Client
}

// startRBD runs rbd serve on a schema and waits until it is ready.
func (l *lab) startRBD(ctx context.Context, schema string, env []string, flags ...string) (*daemon, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{"serve", "--verbs", filepath.Dir(l.verbs), "--listen", addr, "--schema", schema,
		"--database-url", l.url, "--log-format", "json"}, flags...)
	if l.o.advancers > 0 {
		args = append(args, "--advancers", strconv.Itoa(l.o.advancers))
	}
	d := &daemon{cmd: exec.Command(l.o.rbd, args...), server: "http://" + addr, logs: &logBuffer{}, done: make(chan struct{})}
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	// The bench retries and measures 503s itself.
	d.client = &client.Client{BaseURL: d.server, HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}, RetryPolicy: &client.NoRetry}
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	if _, err := d.waitReady(ctx, 2*time.Minute); err != nil {
		_ = d.kill()
		return nil, fmt.Errorf("rbd serve did not become ready: %w\n%s", err, d.logs.tail(20))
	}
	return d, nil
}

// profileEnv is the environment that makes rbd write a CPU profile to
// path when it stops; none for "".
func profileEnv(path string) []string {
	if path == "" {
		return nil
	}
	return []string{"RBD_CPUPROFILE=" + path}
}

// profileBeside names another profile next to the -profile one: "x.pprof"
// and "park" give "x-park.pprof"; "" when no profile was asked for.
func (l *lab) profileBeside(what string) string {
	if l.o.profile == "" {
		return ""
	}
	ext := filepath.Ext(l.o.profile)
	return strings.TrimSuffix(l.o.profile, ext) + "-" + what + ext
}

// waitReady polls /readyz and returns when it answered 200.
func (d *daemon) waitReady(ctx context.Context, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-d.done:
			return time.Time{}, fmt.Errorf("rbd exited: %v", d.err)
		default:
		}
		resp, err := hc.Get(d.server + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, errTimeout
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop() error {
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		_ = d.kill()
		return errors.New("rbd did not stop within a minute of SIGTERM")
	}
	if d.err != nil {
		return fmt.Errorf("rbd exited with %v\n%s", d.err, d.logs.tail(20))
	}
	return nil
}

func (d *daemon) kill() error {
	err := d.cmd.Process.Kill()
	<-d.done
	return err
}

// rss is the daemon's resident set size in bytes, from /proc.
func (d *daemon) rss() (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// logBuffer keeps a process's output.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(l.b.String()), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
