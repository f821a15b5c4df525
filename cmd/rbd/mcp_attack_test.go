package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/httpapi"
)

// mcpAttackTokens: acme's reader and scraper (the attackers, who may read
// or only scrape metrics), acme's submitter, and globex, another tenant,
// whose work must go on whatever acme's tokens do.
const mcpAttackTokens = `tok-read tenant=acme actor=reader roles=read
tok-scrape tenant=acme actor=scraper roles=metrics
tok-acme tenant=acme actor=ann roles=read,submit
tok-globex tenant=globex actor=gus roles=read,submit
`

// mcpPost sends one raw POST /mcp and returns its status and body.
func mcpPost(t *testing.T, d *daemon, token, body string) (int, string) {
	t.Helper()
	return send(t, "POST", d.server+"/mcp", body, "Authorization", "Bearer "+token,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
}

// mcpPostQuietly is mcpPost for a goroutine other than the test's: an
// error is returned, not failed on.
func mcpPostQuietly(d *daemon, token, body string) (int, string, error) {
	req, err := http.NewRequest("POST", d.server+"/mcp", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), err
}

// toolCall is a JSON-RPC tools/call message.
func toolCall(id int, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// timedSubmit submits a small runbook as globex and says how long the
// answer took.
func timedSubmit(t *testing.T, d *daemon, key string) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	status, _, out := submitRaw(t, d, "tok-globex", apitype.SubmitRequest{Source: "(t.echo :v \"g\" :as @g)", IdempotencyKey: key})
	took := time.Since(start)
	require.Less(t, status, 300, out)
	return status, took
}

// Under attack (docs/reliability.md), round 4, row 1: a JSON-RPC batch on POST /mcp ran any number of
// tool calls at once and buffered every answer (a 24 KB batch from a
// read token made a 402 MB answer). A batch over httpapi.MCPMaxBatch
// messages is refused whole, before any of it runs; a batch within it
// runs its calls one by one and stops running them once its answers reach
// httpapi.MCPMaxAnswer bytes, answering the rest "not run". While four
// such batches run at a time, another tenant's submission and signed
// notification are answered within 2 s and the daemon's memory stays
// under 1 GB (prober).
func TestMCPBatchesAreBounded(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", mcpAttackTokens)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--webhook-secret-file", probeSecretFile(t, e))

	// A runbook whose view is about 250 KB: each status answer is that
	// size, twice over (the tool's text and its structured result).
	status, _, out := submitRaw(t, d, "tok-acme", apitype.SubmitRequest{Source: echoes(420, strings.Repeat("v", 520))})
	require.Equal(t, http.StatusCreated, status, out)
	var sub apitype.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(out), &sub))

	var calls []string
	for i := 0; i < 200; i++ {
		calls = append(calls, toolCall(i+1, "whoami", map[string]any{}))
	}
	status, out = mcpPost(t, d, "tok-read", "["+strings.Join(calls, ",")+"]")
	require.Equal(t, http.StatusRequestEntityTooLarge, status, "a batch of 200 calls: %.300s", out)
	var refused struct {
		Error errorAnswer `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &refused), out)
	require.Equal(t, "LIMIT_EXCEEDED", refused.Error.Code)
	require.Equal(t, &limitAnswer{Name: "mcp-batch", Max: httpapi.MCPMaxBatch, Got: 200}, refused.Error.Limit)

	// The attack: batches of status calls on the big runbook, four at a
	// time, while globex submits and notifies.
	probes := startProber(t, d, 10)
	calls = calls[:0]
	for i := 0; i < httpapi.MCPMaxBatch; i++ {
		calls = append(calls, toolCall(i+1, "status", map[string]any{"id": sub.ID.String()}))
	}
	batch := "[" + strings.Join(calls, ",") + "]"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bodies []int
	var answers [][]json.RawMessage
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				status, out, err := mcpPostQuietly(d, "tok-read", batch)
				if err != nil || status != http.StatusOK {
					continue
				}
				var got []json.RawMessage
				if json.Unmarshal([]byte(out), &got) != nil {
					continue
				}
				mu.Lock()
				bodies, answers = append(bodies, len(out)), append(answers, got)
				mu.Unlock()
			}
		}()
	}
	probes.await(t, 10)
	probes.halt()
	close(stop)
	wg.Wait()
	t.Logf("%d batches answered during the attack", len(answers))
	probes.stop(t, 10)
	require.NotEmpty(t, answers, "no batch was answered")
	for i, got := range answers {
		require.Len(t, got, httpapi.MCPMaxBatch, "every message of a batch has its answer")
		ran, notRun := 0, 0
		for _, a := range got {
			switch {
			case strings.Contains(string(a), `"result"`):
				ran++
			case strings.Contains(string(a), "not run: the batch's answers reached the limit"):
				notRun++
			}
		}
		require.Equal(t, httpapi.MCPMaxBatch, ran+notRun, "%.500s", got)
		require.Positive(t, notRun, "a batch of %d big answers ran every call (%d bytes)", httpapi.MCPMaxBatch, bodies[i])
		require.Less(t, bodies[i], 2*httpapi.MCPMaxAnswer, "the batch's answer is bounded")
	}
}

// openListen opens an MCP subscriptions/listen stream with token and
// returns the response once its headers came (the stream stays open
// until the test ends), or its refusal's body.
func openListen(t *testing.T, d *daemon, token string, pad int) (*http.Response, string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},`+
		`"io.modelcontextprotocol/clientCapabilities":{},"pad":%q}}}`, strings.Repeat("p", pad))
	req, err := http.NewRequest("POST", d.server+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	t.Cleanup(func() { resp.Body.Close() })
	// The stream has begun: its first event is the acknowledgement.
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	return resp, line
}

// Under attack (docs/reliability.md), round 4, row 2: an MCP subscriptions/listen held its /mcp request,
// and its body's room in the pool, for ever, outside the stream caps: 32
// padded listens from a metrics-only token made every tenant's submit
// 503. A listen is now a live stream: under --max-streams-per-token
// (429 past it) and --max-streams, holding no body room while it lasts:
// while twelve padded listens are open, another tenant's submission and
// signed notification are answered within 2 s and the daemon's memory
// stays under 1 GB (prober).
func TestMCPListensAreLiveStreamsOutsideTheBodyPool(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.env = append(e.env, "RBD_MAX_CONCURRENT_BODIES=4", "RBD_MAX_BODY=65536", "RBD_MAX_BODIES_PER_ADDRESS=0")
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", mcpAttackTokens)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--max-streams-per-token", "6",
		"--webhook-secret-file", probeSecretFile(t, e))

	// Each listen is padded to take 11 of the pool's 4 KiB chunks: twelve
	// of them, from two tokens, take all 132 (four bodies of 128 KiB, the
	// 64 KiB --max-body and /mcp's 64 KiB envelope).
	opened := 0
	for i := 0; i < 6; i++ {
		for _, token := range []string{"tok-scrape", "tok-read"} {
			if resp, _ := openListen(t, d, token, 42<<10); resp.StatusCode == http.StatusOK {
				opened++
			}
		}
	}
	// Listens held open take no body room: globex submits and notifies at
	// once while they are open.
	require.Equal(t, 12, opened)
	probes := startProber(t, d, 8)
	probes.await(t, 8)
	probes.stop(t, 8)
	resp, body := openListen(t, d, "tok-scrape", 42<<10)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the 7th listen of one token: %s", body)
	require.Contains(t, body, `"name":"max-streams-per-token"`)
}
