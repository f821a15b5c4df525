package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
)

// dialRaw opens a TCP connection to the daemon for a client that writes
// HTTP by hand, as an attacker would.
func dialRaw(t *testing.T, d *daemon) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(d.server, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// trickle writes b a byte at a time, every gap, until it is written or
// the server closes the connection; it reports how long the server let it
// go on. It stops by itself: b is short.
func trickle(conn net.Conn, b string, gap time.Duration) (time.Duration, error) {
	start := time.Now()
	for i := 0; i < len(b); i++ {
		if _, err := conn.Write([]byte{b[i]}); err != nil {
			return time.Since(start), err
		}
		time.Sleep(gap)
	}
	return time.Since(start), nil
}

// answered waits up to wait for the server's first response line on conn,
// or for it to close the connection.
func answered(conn net.Conn, wait time.Duration) (string, error) {
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

// TestSlowClientsAreCutOff is the docs/reliability.md webhook attack, with loopback
// clients that send headers or bodies a byte at a time: the daemon cuts
// them off after --read-header-timeout and --body-timeout, reads at most
// --max-bodies-per-address bodies at once from one address (503 with
// Retry-After beyond), holds at most --max-concurrent-webhooks bodies'
// worth of webhook bodies (503 beyond), cuts off a body that stalls
// after a fast start at --body-min-rate (docs/reliability.md), refuses headers over
// --max-header-bytes, and still keeps a live event stream open far longer
// than the body timeout.
func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.env = append(e.env, "RBD_READ_HEADER_TIMEOUT=1s", "RBD_BODY_TIMEOUT=1s",
		"RBD_MAX_BODIES_PER_ADDRESS=3", "RBD_MAX_HEADER_BYTES=8192")
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	d := e.start(t, "--verbs", verbs)
	webhook := "POST /v1/notifications HTTP/1.1\r\nHost: rbd\r\nContent-Type: application/json\r\n"

	t.Run("slow headers", func(t *testing.T) {
		conn := dialRaw(t, d)
		// 60 bytes at 100ms: 6s, far past the 1s header timeout.
		took, err := trickle(conn, webhook+"X-Slow: "+strings.Repeat("a", 40), 100*time.Millisecond)
		require.Error(t, err, "the daemon waited %v for the headers", took)
		require.Less(t, took, 4*time.Second)
	})

	t.Run("slow body", func(t *testing.T) {
		conn := dialRaw(t, d)
		_, err := fmt.Fprintf(conn, "%sContent-Length: 1000\r\n\r\n{", webhook)
		require.NoError(t, err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = trickle(conn, strings.Repeat(" ", 50), 100*time.Millisecond)
		}()
		line, err := answered(conn, 4*time.Second)
		require.NoError(t, err, "the daemon still reads a body trickling in after 4s")
		require.Equal(t, "HTTP/1.1 408 Request Timeout", line)
		<-done
	})

	t.Run("bodies read at once from one address", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := 0; i < 3; i++ {
			conn := dialRaw(t, d)
			_, err := fmt.Fprintf(conn, "%sContent-Length: 1000\r\n\r\n{", webhook)
			require.NoError(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = trickle(conn, strings.Repeat(" ", 15), 100*time.Millisecond)
			}()
		}
		time.Sleep(300 * time.Millisecond) // the three hold the address's bodies
		note := `{"correlation_key": "k", "status": "completed"}`
		resp, err := http.Post(d.server+"/v1/notifications", "application/json", strings.NewReader(note))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		status := postFrom(t, d, net.IPv4(127, 0, 0, 9), "/v1/notifications", note)
		require.Equal(t, http.StatusAccepted, status, "another address is not held up")
		wg.Wait()
		waitUntil(t, "the address to be free again", func() (bool, error) {
			status, _ := send(t, "POST", d.server+"/v1/notifications", note)
			return status == http.StatusOK, nil // a repeat of the one from 127.0.0.9
		})
	})

	t.Run("large headers", func(t *testing.T) {
		status, _ := send(t, "GET", d.server+"/healthz", "", "X-Big", strings.Repeat("b", 32<<10))
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, status)
	})

	t.Run("event streams outlive the body timeout", func(t *testing.T) {
		cl := d.client("")
		ctx := context.Background()
		sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: "(t.wait :as @w)"})
		require.NoError(t, err)
		var key string
		waitUntil(t, "the step to park", func() (bool, error) {
			v, err := cl.Get(ctx, sub.ID.String())
			if err != nil || len(v.BlockedOn) == 0 {
				return false, err
			}
			key = v.BlockedOn[0].CorrelationKey
			return true, nil
		})
		req, err := http.NewRequest("GET", d.server+"/v1/runbooks/"+sub.ID.String()+"/events", nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		time.Sleep(2500 * time.Millisecond) // past the header and body timeouts
		_, err = cl.Notify(ctx, apitype.NotificationRequest{CorrelationKey: key, Status: "completed", Result: json.RawMessage(`{}`)})
		require.NoError(t, err)
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			if lines.Text() == "event: end" {
				return
			}
		}
		t.Fatalf("the stream ended without its last event: %v", lines.Err())
	})
}

// postFrom posts body to the daemon from a loopback address of its own and
// returns the status.
func postFrom(t *testing.T, d *daemon, from net.IP, path, body string) int {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: from}}).DialContext}}
	resp, err := client.Post(d.server+path, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// docs/reliability.md: a body that arrives fast and then stalls is cut off at
// --body-min-rate, measured over each chunk, long before --body-timeout;
// and while it is held, a webhook pool of one body's worth
// (--max-concurrent-webhooks 1) refuses another webhook but not a
// token-checked request, which has a pool of its own.
func TestAStalledBodyIsCutOffAndHoldsOnlyItsPool(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.env = append(e.env, "RBD_MAX_BODY=65536", "RBD_MAX_CONCURRENT_WEBHOOKS=1", "RBD_MAX_CONCURRENT_BODIES=1")
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	d := e.start(t, "--verbs", verbs)
	conn := dialRaw(t, d)
	start := time.Now()
	_, err := fmt.Fprintf(conn, "POST /v1/notifications HTTP/1.1\r\nHost: rbd\r\nContent-Length: 65000\r\n\r\n{%s", strings.Repeat(" ", 60000))
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // 60 kB in: the pool holds the body's bytes
	note := `{"correlation_key": "k2", "status": "completed", "result": {"pad": "` + strings.Repeat("x", 16000) + `"}}`
	status := postFrom(t, d, net.IPv4(127, 0, 0, 7), "/v1/notifications", note)
	require.Equal(t, http.StatusServiceUnavailable, status, "a second webhook while the first holds the pool")
	status, _ = send(t, "POST", d.server+"/v1/runbooks", `{"source": "(t.echo :v \"x\")"}`)
	require.Equal(t, http.StatusCreated, status, "token-checked requests have their own pool")
	line, err := answered(conn, 20*time.Second)
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 408 Request Timeout", line)
	require.Less(t, time.Since(start), 15*time.Second, "cut off by the rate, not the 30s body timeout")
	waitUntil(t, "the pool to be free again", func() (bool, error) {
		status := postFrom(t, d, net.IPv4(127, 0, 0, 7), "/v1/notifications", note)
		return status == http.StatusAccepted, nil
	})
}
