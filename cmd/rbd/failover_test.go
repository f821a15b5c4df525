package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
)

// pairSettings make the two servers quick; what they hold is thrown away.
var pairSettings = map[string]string{"fsync": "off", "full_page_writes": "off", "autovacuum": "off", "max_connections": "100", "shared_buffers": "32MB"}

// TestResumeGoesOnAcrossAFailover runs rbd on a multi-host URL naming a
// primary and its synchronous standby, parks a runbook, stops the primary
// and promotes the standby (pg_ctl promote): /readyz answers 503 while
// there is no primary, the loss is logged once and counted, the listener
// connects again to the new primary, and a notification sent after the
// promotion resumes the runbook to its end (docs/scaling.md, "Across a
// failover").
func TestResumeGoesOnAcrossAFailover(t *testing.T) {
	t.Parallel()
	pair := pgtest.StartPair(t, pairSettings, true)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	d := e.start(t, "--database-url", pair.URL("postgres"), "--verbs", verbs)
	require.Contains(t, d.logs.String(), "the database primary commits synchronously to a standby")
	ctx := context.Background()
	cl := d.client("")
	sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: `(t.wait :as @w) (t.echo :v "after" :after @w)`})
	require.NoError(t, err)
	var key string
	waitUntil(t, "the wait to park", func() (bool, error) {
		v, err := cl.Get(ctx, sub.ID.String())
		if err != nil || len(v.BlockedOn) == 0 {
			return false, err
		}
		key = v.BlockedOn[0].CorrelationKey
		return true, nil
	})

	require.NoError(t, pair.Primary.Stop())
	waitUntil(t, "/readyz to answer 503 without a primary", func() (bool, error) {
		status, _ := send(t, "GET", d.server+"/readyz", "")
		return status == http.StatusServiceUnavailable, nil
	})
	waitUntil(t, "the daemon to log the primary's loss", func() (bool, error) {
		return strings.Contains(d.logs.String(), "lost the database primary"), nil
	})
	promoted := time.Now()
	pair.Promote(t)
	waitUntil(t, "/readyz to answer 200 on the new primary", func() (bool, error) {
		status, _ := send(t, "GET", d.server+"/readyz", "")
		return status == http.StatusOK, nil
	})
	waitUntil(t, "the listener to connect to the new primary", func() (bool, error) {
		_, metrics := send(t, "GET", d.server+"/metrics", "")
		return regexp.MustCompile(`(?m)^rbd_listener_reconnects_total [1-9]`).MatchString(metrics), nil
	})

	resp, err := cl.Notify(ctx, apitype.NotificationRequest{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: json.RawMessage(`{"ok": true}`)})
	require.NoError(t, err)
	require.Equal(t, "accepted", resp.Status, "the notification was stored on the new primary")
	waitUntil(t, "the runbook to complete on the new primary", func() (bool, error) {
		v, err := cl.Get(ctx, sub.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
	t.Logf("promotion to completion: %s", time.Since(promoted).Round(time.Millisecond))

	var metrics string
	waitUntil(t, "the primary's watch to see the new primary", func() (bool, error) {
		_, metrics = send(t, "GET", d.server+"/metrics", "")
		return regexp.MustCompile(`(?m)^rbd_db_primary_up 1$`).MatchString(metrics), nil
	})
	require.Regexp(t, `(?m)^rbd_db_primary_lost_total 1$`, metrics)
	require.Regexp(t, `(?m)^rbd_db_primary_down_seconds_total [0-9.e+-]+$`, metrics)
	require.NotRegexp(t, `(?m)^rbd_db_primary_down_seconds_total 0$`, metrics)
	require.Regexp(t, `(?m)^rbd_db_async_replication 0$`, metrics)
	logs := d.logs.String()
	require.Equal(t, 1, strings.Count(logs, "lost the database primary"), "the loss is logged once:\n%s", logs)
	require.Equal(t, 1, strings.Count(logs, "the database primary answers again"), "and its end once")
	require.Equal(t, 0, d.stop(syscall.SIGTERM))
}

// TestRefusesAsynchronousStandbyWithoutTheFlag starts rbd on a primary
// whose standby is asynchronous: it refuses, naming
// --allow-async-replication, and starts with it, showing it in /metrics.
func TestRefusesAsynchronousStandbyWithoutTheFlag(t *testing.T) {
	t.Parallel()
	pair := pgtest.StartPair(t, pairSettings, false)
	e := newDaemonEnv(t)
	url := pair.URL("postgres")

	port, err := freePort()
	require.NoError(t, err)
	cmd := exec.Command(rbdBinary(), "serve", "--database-url", url)
	cmd.Env = append(os.Environ(), "RBD_TEST_MAIN=1", "RBD_LISTEN=127.0.0.1:"+strconv.Itoa(port), "RBD_SCHEMA="+e.schema)
	cmd.Env = append(cmd.Env, e.env...)
	done := make(chan struct{})
	var out []byte
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("rbd serve did not refuse an asynchronous standby within a minute")
	}
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "rbd serve must fail:\n%s", out)
	require.Equal(t, exitFailed, exitErr.ExitCode())
	require.Contains(t, string(out), "--allow-async-replication")
	require.Contains(t, string(out), "synchronous_standby_names is empty")

	d := e.start(t, "--database-url", url, "--allow-async-replication")
	_, metrics := send(t, "GET", d.server+"/metrics", "")
	require.Regexp(t, `(?m)^rbd_db_async_replication 1$`, metrics)
	require.Contains(t, d.logs.String(), "--allow-async-replication: the database primary has standbys its commits do not wait for")
	require.Equal(t, 0, d.stop(syscall.SIGTERM))
}
