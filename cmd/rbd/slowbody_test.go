package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
)

// slowAttack is a slow-body attack on the webhook: conns connections at
// once, each from one of addrs loopback addresses, each sending the
// headers of a notification with a fresh-looking forged signature and a
// body of a thousand bytes, a byte a second; cut off, it connects again.
type slowAttack struct {
	server string
	conns  int
	addrs  int // spread over 127.0.0.2, 127.0.0.3, ...
	stop   chan struct{}
	wg     sync.WaitGroup
	// connects counts the connections made; cut those the daemon ended
	// (an answer, or a close) while the body was still trickling.
	connects, cut atomic.Int64
}

func startSlowAttack(server string, conns, addrs int) *slowAttack {
	a := &slowAttack{server: strings.TrimPrefix(server, "http://"), conns: conns, addrs: addrs, stop: make(chan struct{})}
	for i := 0; i < conns; i++ {
		a.wg.Add(1)
		go a.connection(net.IPv4(127, 0, 0, byte(2+i%addrs)))
	}
	return a
}

func (a *slowAttack) connection(from net.IP) {
	defer a.wg.Done()
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: from}, Timeout: 5 * time.Second}
	for {
		select {
		case <-a.stop:
			return
		default:
		}
		conn, err := dialer.Dial("tcp", a.server)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		a.connects.Add(1)
		forged := fmt.Sprintf("t=%d,v1=%s", time.Now().Unix(), strings.Repeat("ab", 32))
		_, err = fmt.Fprintf(conn, "POST /v1/notifications HTTP/1.1\r\nHost: rbd\r\nContent-Type: application/json\r\n"+
			"%s: %s\r\nContent-Length: 1000\r\n\r\n{", client.SignatureHeader, forged)
		closed := make(chan struct{})
		go func() {
			// The daemon answering, or closing, ends the trickle.
			var b [1]byte
			_, _ = conn.Read(b[:])
			close(closed)
		}()
		for sent := 1; err == nil && sent < 1000; sent++ {
			select {
			case <-a.stop:
				conn.Close()
				return
			case <-closed:
				err = net.ErrClosed
			case <-time.After(time.Second):
				_, err = conn.Write([]byte{' '})
			}
		}
		if err != nil {
			a.cut.Add(1)
		}
		conn.Close()
	}
}

func (a *slowAttack) end() {
	close(a.stop)
	a.wg.Wait()
}

// legitimate are the answers to signed notifications and token requests
// sent while the attack ran: each sent once, never retried.
type legitimate struct {
	statuses  map[string][]int // by kind
	latencies []time.Duration  // of the notifications served
}

func (l *legitimate) served(kind string) int {
	n := 0
	for _, s := range l.statuses[kind] {
		if s < 300 {
			n++
		}
	}
	return n
}

func (l *legitimate) percentile(p float64) time.Duration {
	if len(l.latencies) == 0 {
		return 0
	}
	s := slices.Clone(l.latencies)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// parkWaits submits n runbooks that park on a notification, and returns
// their correlation keys.
func parkWaits(t *testing.T, d *daemon, token, prefix string, n int) []string {
	t.Helper()
	ctx := context.Background()
	rbd := d.client(token)
	var keys []string
	for i := 0; i < n; i++ {
		sub, err := rbd.Submit(ctx, apitype.SubmitRequest{Source: "(t.wait :as @w)", Inputs: map[string]any{}, IdempotencyKey: fmt.Sprintf("%s-park-%d", prefix, i)})
		require.NoError(t, err)
		waitUntil(t, "the step to park", func() (bool, error) {
			v, err := rbd.Get(ctx, sub.ID.String())
			if err != nil || len(v.BlockedOn) == 0 {
				return false, err
			}
			keys = append(keys, v.BlockedOn[0].CorrelationKey)
			return true, nil
		})
	}
	return keys
}

// sendLegitimately sends, one every gap, a signed notification for each
// key and a token-checked submission, each once.
func sendLegitimately(t *testing.T, d *daemon, token, prefix string, secret []byte, keys []string, gap time.Duration) *legitimate {
	t.Helper()
	l := &legitimate{statuses: map[string][]int{}}
	hc := &http.Client{Timeout: 60 * time.Second}
	do := func(kind, path, body string, header ...string) (int, time.Duration) {
		req, err := http.NewRequest("POST", d.server+path, strings.NewReader(body))
		require.NoError(t, err)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		start := time.Now()
		resp, err := hc.Do(req)
		took := time.Since(start)
		status := 0
		if err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		l.statuses[kind] = append(l.statuses[kind], status)
		return status, took
	}
	for i, key := range keys {
		note, err := json.Marshal(apitype.NotificationRequest{CorrelationKey: key, Status: "completed", Result: json.RawMessage(`{}`)})
		require.NoError(t, err)
		status, took := do("notification", "/v1/notifications", string(note), client.SignatureHeader, client.Sign(secret, note, time.Now()))
		if status == http.StatusAccepted {
			l.latencies = append(l.latencies, took)
		}
		do("submit", "/v1/runbooks", `{"source": "(t.echo :v \"x\")"}`, "Authorization", "Bearer "+token, "Idempotency-Key", fmt.Sprintf("%s-legit-%d", prefix, i))
		time.Sleep(gap)
	}
	return l
}

// Under attack (docs/reliability.md), row 2: 300 connections trickling forged notifications a
// byte a second, from one address and then spread over 150, must not keep
// a signed notification or a token's submission from being served (the
// same are sent first with no attack, for their latency). Set
// RBD_SLOWBODY_NOTIFICATIONS to send more of them (the figures in
// docs/reliability.md); -v prints the figures.
func TestSlowBodiesDoNotStarveSignedNotifications(t *testing.T) {
	t.Parallel()
	n := 10
	if v := os.Getenv("RBD_SLOWBODY_NOTIFICATIONS"); v != "" {
		_, err := fmt.Sscan(v, &n)
		require.NoError(t, err)
	}
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", "tok\n")
	secret := e.file(t, "secret", "whsec\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--webhook-secret-file", secret)
	// First without an attack: the latency to compare with.
	for _, addrs := range []int{0, 1, 150} {
		name := fmt.Sprintf("from %d addresses", addrs)
		if addrs == 0 {
			name = "no attack"
		}
		t.Run(name, func(t *testing.T) {
			keys := parkWaits(t, d, "tok", fmt.Sprint(addrs), n)
			var attack *slowAttack
			if addrs > 0 {
				attack = startSlowAttack(d.server, 300, addrs)
				time.Sleep(3 * time.Second) // every connection is in, trickling
			}
			l := sendLegitimately(t, d, "tok", fmt.Sprint(addrs), []byte("whsec"), keys, 200*time.Millisecond)
			figures := fmt.Sprintf("notifications served %d of %d (statuses %v), latency p50 %v p99 %v max %v; submissions served %d of %d (statuses %v)",
				l.served("notification"), n, l.statuses["notification"], l.percentile(0.5), l.percentile(0.99), l.percentile(1),
				l.served("submit"), n, l.statuses["submit"])
			if attack != nil {
				attack.end()
				t.Logf("300 slow connections from %d addresses (%d connections made, %d cut off): %s",
					addrs, attack.connects.Load(), attack.cut.Load(), figures)
			} else {
				t.Logf("no attack: %s", figures)
			}
			require.Equal(t, n, l.served("notification"), "signed notifications refused: %v", l.statuses["notification"])
			require.Equal(t, n, l.served("submit"), "submissions refused: %v", l.statuses["submit"])
		})
	}
}
