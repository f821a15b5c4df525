package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// The ways the service completes a task.
const (
	variantLater    = "later"    // once, after a random delay
	variantEarly    = "early"    // once, before the start is answered (before the park)
	variantTwice    = "twice"    // the same notification twice: a duplicate
	variantConflict = "conflict" // then another payload for the same key: a conflict
)

var variants = []string{variantLater, variantLater, variantEarly, variantTwice, variantConflict}

// notifier sends the service's signed webhook notifications and keeps what
// each answer said. A sender retries what the contract says to retry (a
// refused connection, 503) until a final answer, as a webhook sender does.
type notifier struct {
	secret []byte
	http   *http.Client
	ctx    context.Context
	// daemons are every daemon's webhook: a sender behind a load balancer
	// reaches any of them, the workers (killed now and then) included.
	daemons []string

	accepted   atomic.Int64 // 202
	lastAccept atomic.Int64 // when the latest 202 came, in Unix nanoseconds
	duplicates atomic.Int64 // 200 duplicate
	conflicts  atomic.Int64 // 409
	retried    atomic.Int64 // attempts answered 503 or not at all, sent again
	inFlight   sync.WaitGroup

	mu sync.Mutex
	// delivered holds each key whose first payload the daemon took (202,
	// or a duplicate after an attempt whose answer was lost): the inbox
	// must have consumed it.
	delivered map[string]json.RawMessage
	accepts   map[string]int // 202s by key: more than one is a violation
	problems  []string
}

func newNotifier(ctx context.Context, secret []byte) *notifier {
	return &notifier{
		secret: secret, ctx: ctx,
		http:      &http.Client{Timeout: 10 * time.Second},
		delivered: map[string]json.RawMessage{},
		accepts:   map[string]int{},
	}
}

// later delivers after delay, in the background; wait waits for it.
func (n *notifier) later(delay time.Duration, callbackURL, key string, result map[string]any, variant string) {
	n.inFlight.Add(1)
	go func() {
		defer n.inFlight.Done()
		time.Sleep(delay)
		n.deliver(callbackURL, key, result, variant)
	}()
}

// wait waits for every notification sent later to have its answers.
func (n *notifier) wait() { n.inFlight.Wait() }

// deliver sends the task's notification as its variant says.
func (n *notifier) deliver(callbackURL, key string, result map[string]any, variant string) {
	payload, _ := json.Marshal(result)
	first := n.send(callbackURL, key, payload)
	switch first {
	case "accepted", "duplicate":
		n.mu.Lock()
		n.delivered[key] = payload
		n.mu.Unlock()
	default:
		n.problem("the first notification for %s was answered %s", key, first)
		return
	}
	switch variant {
	case variantTwice:
		if got := n.send(callbackURL, key, payload); got != "duplicate" {
			n.problem("a repeated notification for %s was answered %s, not duplicate", key, got)
		}
	case variantConflict:
		other, _ := json.Marshal(map[string]any{"effect_id": "conflicting"})
		if got := n.send(callbackURL, key, other); got != "conflict" {
			n.problem("a conflicting notification for %s was answered %s, not conflict", key, got)
		}
	}
}

// send posts one notification until it gets a final answer: "accepted",
// "duplicate", "conflict", or the status of another refusal.
func (n *notifier) send(callbackURL, key string, payload json.RawMessage) string {
	body, _ := json.Marshal(apitype.NotificationRequest{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: payload})
	deadline := time.Now().Add(5 * time.Minute)
	targets := append([]string{callbackURL}, n.daemons...)
	h := fnv.New32a()
	h.Write([]byte(key))
	first := int(h.Sum32() % uint32(len(targets)))
	for i := 0; ; i++ {
		answer, retry := n.attempt(targets[(first+i)%len(targets)], body)
		if !retry {
			switch answer {
			case "accepted":
				n.accepted.Add(1)
				n.lastAccept.Store(time.Now().UnixNano())
				n.mu.Lock()
				n.accepts[key]++
				if n.accepts[key] > 1 {
					n.problems = append(n.problems, fmt.Sprintf("notification key %s was accepted (202) %d times", key, n.accepts[key]))
				}
				n.mu.Unlock()
			case "duplicate":
				n.duplicates.Add(1)
			case "conflict":
				n.conflicts.Add(1)
			}
			return answer
		}
		n.retried.Add(1)
		if time.Now().After(deadline) || n.ctx.Err() != nil {
			return "unanswered: " + answer
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// attempt is one POST; retry says whether the answer invites another.
func (n *notifier) attempt(callbackURL string, body []byte) (answer string, retry bool) {
	req, err := http.NewRequestWithContext(n.ctx, http.MethodPost, callbackURL, bytes.NewReader(body))
	if err != nil {
		return err.Error(), false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(client.SignatureHeader, client.Sign(n.secret, body, time.Now()))
	resp, err := n.http.Do(req)
	if err != nil {
		return err.Error(), true
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error(), true
	}
	switch resp.StatusCode {
	case http.StatusAccepted, http.StatusOK:
		var out apitype.NotificationResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Sprintf("%d with an unreadable body", resp.StatusCode), false
		}
		return out.Status, false
	case http.StatusConflict:
		return "conflict", false
	case http.StatusServiceUnavailable:
		return "503", true
	default:
		return fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(raw)), false
	}
}

func (n *notifier) problem(format string, args ...any) {
	if errors.Is(n.ctx.Err(), context.Canceled) {
		return // the soak is being stopped: not the daemon's fault
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.problems = append(n.problems, fmt.Sprintf(format, args...))
}

// firstAcceptAfter watches for the first notification accepted (202:
// stored) after since, and returns how long after since it came, or
// within if none came.
func (n *notifier) firstAcceptAfter(since time.Time, within time.Duration) time.Duration {
	for time.Since(since) < within {
		if at := n.lastAccept.Load(); at > since.UnixNano() {
			return time.Duration(at - since.UnixNano())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return within
}
