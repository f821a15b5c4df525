package pgtest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/durable/localpg"
)

// Pair is a primary and a streaming standby of it, two plain PostgreSQL
// servers on this machine: what a test of a failover needs (stop the
// primary, Promote the standby) without an HA engine.
type Pair struct {
	Primary, Standby *localpg.Server
	standbyDir       string
}

// StartPair starts a primary with settings, makes a standby of it with
// pg_basebackup (which writes its primary_conninfo and standby.signal),
// starts the standby with the same settings, and waits until it streams.
// With synchronous, the primary's commits wait for the standby
// (synchronous_standby_names = '*'); the standby is not given that
// setting, for once promoted it has no standby of its own to wait for.
// Both stop when the test ends. It skips the test, saying why, when
// PostgreSQL's binaries are not installed (make postgres installs them).
func StartPair(t testing.TB, settings map[string]string, synchronous bool) *Pair {
	t.Helper()
	bin, err := localpg.FindBinaries()
	if err != nil {
		t.Skipf("no PostgreSQL binaries to start a primary and a standby (make postgres installs them): %v", err)
	}
	if _, err := os.Stat(filepath.Join(bin, "pg_basebackup")); err != nil {
		t.Skipf("no pg_basebackup beside PostgreSQL's binaries in %s (make postgres installs it): %v", bin, err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &Pair{standbyDir: filepath.Join(dir, "standby")}
	primarySettings := maps.Clone(settings)
	if synchronous {
		if primarySettings == nil {
			primarySettings = map[string]string{}
		}
		primarySettings["synchronous_standby_names"] = "*"
	}
	p.Primary, err = localpg.Start(ctx, localpg.Options{Dir: filepath.Join(dir, "primary"), Settings: primarySettings})
	if err != nil {
		t.Fatalf("starting the primary: %v", err)
	}
	t.Cleanup(func() { _ = p.Primary.Stop() })
	// pg_basebackup runs as the caller (it is a client), into a
	// directory the standby's server is then given by localpg.Start.
	cmd := []string{"-d", p.Primary.URL("postgres"), "-D", p.standbyDir, "-R", "-X", "stream", "-c", "fast", "--no-sync"}
	if out, err := runClient(ctx, bin, "pg_basebackup", cmd...); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	p.Standby, err = localpg.Start(ctx, localpg.Options{Dir: p.standbyDir, Settings: settings})
	if err != nil {
		t.Fatalf("starting the standby: %v", err)
	}
	t.Cleanup(func() { _ = p.Standby.Stop() })
	deadline := time.Now().Add(time.Minute)
	for {
		var streaming int
		err := queryRow(ctx, p.Primary.URL("postgres"), "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'", &streaming)
		if err == nil && streaming == 1 {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby never streamed from the primary (%v); see %s/server.log", err, p.standbyDir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// URL is a multi-host connection string naming both servers, primary
// first, that connects only to the one that accepts writes
// (target_session_attrs=read-write): rbd's --database-url in a cluster.
func (p *Pair) URL(db string) string {
	return MultiHostURL(db, p.Primary, p.Standby)
}

// MultiHostURL is a connection string for database db that names every
// server, connecting to whichever accepts writes.
func MultiHostURL(db string, servers ...*localpg.Server) string {
	var hosts, ports []string
	for _, s := range servers {
		hosts = append(hosts, s.SocketDir())
		ports = append(ports, strconv.Itoa(s.Port()))
	}
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%s&target_session_attrs=read-write&sslmode=disable",
		db, strings.Join(hosts, ","), strings.Join(ports, ","))
}

// Promote makes the standby the primary, as pg_ctl promote does, and
// waits until it accepts writes.
func (p *Pair) Promote(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := p.Standby.RunAs(ctx, "pg_ctl", "promote", "-w", "-D", p.standbyDir); err != nil {
		// pg_ctl, run as the server's user, may not reach the cluster
		// by its path (a 0700 directory above it): pg_promote() does
		// the same from a session.
		var promoted bool
		if qerr := queryRow(ctx, p.Standby.URL("postgres"), "SELECT pg_promote(true, 60)", &promoted); qerr != nil || !promoted {
			t.Fatalf("promoting the standby: pg_ctl promote: %v\n%s\npg_promote(): %v", err, out, qerr)
		}
	}
}

func runClient(ctx context.Context, bin, program string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, filepath.Join(bin, program), args...).CombinedOutput()
}

func queryRow(ctx context.Context, url, sql string, dest ...any) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.QueryRow(ctx, sql).Scan(dest...)
}
