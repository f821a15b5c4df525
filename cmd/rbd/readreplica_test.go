package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/httpapi"
)

// exchange makes a raw request and returns the status, the answer's
// headers and its body.
func exchange(t *testing.T, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(out)
}

// TestReadsFromTheStandbyNeverOlderThanOwnWrite serves the views from a
// standby whose replay is paused: another token's list, read there, does
// not show a runbook just submitted; the writer's own read (remembered
// by its token, or echoed in Rbd-Read-After) goes to the primary and
// does; once the standby replays, the other token's read with the
// echoed position is served by the standby and shows it
// (docs/scaling.md, "Reads from a standby").
func TestReadsFromTheStandbyNeverOlderThanOwnWrite(t *testing.T) {
	t.Parallel()
	pair := pgtest.StartPair(t, pairSettings, true)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", "writer\nreader\n")
	d := e.start(t, "--database-url", pair.URL("postgres"), "--read-database-url", pair.Standby.URL("postgres"),
		"--verbs", verbs, "--api-token-file", tokens)
	writer, reader := []string{"Authorization", "Bearer writer"}, []string{"Authorization", "Bearer reader"}
	ctx := context.Background()
	standby, err := pgx.Connect(ctx, pair.Standby.URL("postgres"))
	require.NoError(t, err)
	defer standby.Close(ctx)
	waitUntil(t, "the daemon to read from the standby", func() (bool, error) {
		return strings.Contains(d.logs.String(), "reading the views from the standby"), nil
	})

	// Paused only once it has replayed everything so far: paused between
	// a lock the startup process took for a migration's DDL (or a
	// VACUUM's truncation) and its commit, the standby would keep
	// every read of that table waiting until replay resumed.
	primary, err := pgx.Connect(ctx, pair.Primary.URL("postgres"))
	require.NoError(t, err)
	defer primary.Close(ctx)
	var now string
	require.NoError(t, primary.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&now))
	waitUntil(t, "the standby to replay the migrations", func() (bool, error) {
		var replayed bool
		err := standby.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", now).Scan(&replayed)
		return replayed, err
	})
	_, err = standby.Exec(ctx, "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	status, header, body := exchange(t, "POST", d.server+"/v1/runbooks", `{"source": "(t.wait :as @w)"}`, writer...)
	require.Equal(t, http.StatusCreated, status, body)
	pos := header.Get(httpapi.ReadAfterHeader)
	require.Regexp(t, `^[0-9A-F]+/[0-9A-F]+$`, pos, "a write's answer says where the log ended after it")
	var sub apitype.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(body), &sub))
	runbook := d.server + "/v1/runbooks/" + sub.ID.String()

	status, _, body = exchange(t, "GET", d.server+"/v1/runbooks", "", reader...)
	require.Equal(t, http.StatusOK, status, body)
	require.NotContains(t, body, sub.ID.String(), "another token's list came from the paused standby")
	status, _, _ = exchange(t, "GET", runbook, "", reader...)
	require.Equal(t, http.StatusNotFound, status, "so did its read of the runbook")
	status, _, body = exchange(t, "GET", runbook, "", writer...)
	require.Equal(t, http.StatusOK, status, "the writer reads its own write (from the primary): %s", body)
	status, _, body = exchange(t, "GET", runbook, "", append(reader, httpapi.ReadAfterHeader, pos)...)
	require.Equal(t, http.StatusOK, status, "so does whoever echoes the position: %s", body)
	status, _, body = exchange(t, "GET", runbook, "", append(reader, httpapi.ReadAfterHeader, "not a position")...)
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Contains(t, body, httpapi.ReadAfterHeader)

	_, err = standby.Exec(ctx, "SELECT pg_wal_replay_resume()")
	require.NoError(t, err)
	var replayed bool
	waitUntil(t, "the standby to replay the write", func() (bool, error) {
		err := standby.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", pos).Scan(&replayed)
		return replayed, err
	})
	status, _, body = exchange(t, "GET", d.server+"/v1/runbooks", "", reader...)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, sub.ID.String(), "the standby has it now")
	require.Equal(t, 0, d.stop(syscall.SIGTERM))
}
