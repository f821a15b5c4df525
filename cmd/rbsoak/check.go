package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/rbtype"
)

// stored is what the database holds at the end, read directly: the
// checks judge the daemons by their tables, not by their API.
type stored struct {
	runbooks      map[uuid.UUID]*storedRunbook
	notifications map[string]storedNotification // by correlation key
	activeLeases  int
}

// reclaims counts the steps taken back from a worker whose lease ran out
// (it died, or lost its database). rbd records each as STEP_RECLAIMED;
// before that event existed, a step that was running became ready, or
// started again, with nothing in between, which is counted too. The lease
// rows cannot tell, since a step's row is replaced at its next lease.
func (st *stored) reclaims() int {
	n := 0
	for _, rb := range st.runbooks {
		last := map[string]rbtype.EventType{}
		for _, e := range rb.events {
			if e.step == "" {
				continue
			}
			switch {
			case e.typ == rbtype.EventStepReclaimed:
				n++
			case last[e.step] == rbtype.EventStepStarted && (e.typ == rbtype.EventStepStarted || e.typ == rbtype.EventStepReady):
				n++
			}
			last[e.step] = e.typ
		}
	}
	return n
}

type storedRunbook struct {
	id     uuid.UUID
	status rbtype.RunbookStatus
	run    string
	steps  map[string]*storedStep
	events []storedEvent
}

type storedStep struct {
	key, verb, status, idemKey, errorCode string
	result                                json.RawMessage
}

// template reports whether the step is a for-each's template: it never
// calls its verb, and its result is its instances' list.
func (s *storedStep) template() bool {
	return len(s.result) > 0 && s.result[0] == '['
}

type storedEvent struct {
	id   int64
	typ  rbtype.EventType
	step string
}

type storedNotification struct {
	status string
	result json.RawMessage
}

// runbookTerminal maps each runbook event that ends a runbook to the
// status it leaves.
var runbookTerminal = map[rbtype.EventType]rbtype.RunbookStatus{
	rbtype.EventRunbookCompleted: rbtype.RunbookComplete,
	rbtype.EventRunbookFailed:    rbtype.RunbookFailed,
	rbtype.EventRunbookCancelled: rbtype.RunbookCancelled,
	rbtype.EventRunbookEscalated: rbtype.RunbookEscalated,
	rbtype.EventRunbookPartial:   rbtype.RunbookPartial,
}

// stepTerminal are the step events after which the step has no more.
var stepTerminal = map[rbtype.EventType]bool{
	rbtype.EventStepSucceeded: true, rbtype.EventStepSkipped: true, rbtype.EventStepCancelled: true,
}

// waitSettled polls until no runbook is running and no notification
// waits in the inbox, or the timeout; it returns the runbooks running.
func waitSettled(ctx context.Context, url string, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		var running, waiting int
		err := queryOnce(ctx, url, func(conn *pgx.Conn) error {
			// A notification for a wait that was cancelled is marked
			// ignored by the next sweep: give it that sweep.
			return conn.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM rbd.runbooks WHERE status IN ('executing', 'in_progress')),
				(SELECT count(*) FROM rbd.completion_notifications WHERE status = 'received')`).Scan(&running, &waiting)
		})
		if err == nil && running == 0 && waiting == 0 {
			return 0, nil
		}
		if time.Now().After(deadline) {
			return running, err
		}
		sleepCtx(ctx, time.Second)
		if ctx.Err() != nil {
			return running, ctx.Err()
		}
	}
}

func queryOnce(ctx context.Context, url string, fn func(*pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(conn)
}

// load reads the tables the checks need.
func load(ctx context.Context, url string) (*stored, error) {
	st := &stored{runbooks: map[uuid.UUID]*storedRunbook{}, notifications: map[string]storedNotification{}}
	err := queryOnce(ctx, url, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT id, status, coalesce(inputs->>'run', '') FROM rbd.runbooks`)
		if err != nil {
			return err
		}
		for rows.Next() {
			rb := &storedRunbook{steps: map[string]*storedStep{}}
			if err := rows.Scan(&rb.id, &rb.status, &rb.run); err != nil {
				return err
			}
			st.runbooks[rb.id] = rb
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = conn.Query(ctx, `SELECT runbook_id, key, verb, status, coalesce(idempotency_key, ''), coalesce(error_code, ''), result FROM rbd.runbook_steps`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id uuid.UUID
			s := &storedStep{}
			if err := rows.Scan(&id, &s.key, &s.verb, &s.status, &s.idemKey, &s.errorCode, &s.result); err != nil {
				return err
			}
			if rb := st.runbooks[id]; rb != nil {
				rb.steps[s.key] = s
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = conn.Query(ctx, `SELECT runbook_id, id, type, coalesce(step_key, '') FROM rbd.runbook_events ORDER BY id`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id uuid.UUID
			var e storedEvent
			if err := rows.Scan(&id, &e.id, &e.typ, &e.step); err != nil {
				return err
			}
			if rb := st.runbooks[id]; rb != nil {
				rb.events = append(rb.events, e)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = conn.Query(ctx, `SELECT correlation_key, status, result FROM rbd.completion_notifications`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var key string
			var n storedNotification
			if err := rows.Scan(&key, &n.status, &n.result); err != nil {
				return err
			}
			st.notifications[key] = n
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return conn.QueryRow(ctx, `SELECT count(*) FROM rbd.step_leases WHERE status = 'active'`).Scan(&st.activeLeases)
	})
	return st, err
}

// violations judges the end state against what the driver asked for and
// what the service recorded.
func violations(st *stored, subs []*submitted, svc *service, n *notifier) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	// Every submission made one runbook, even those retried after a lost
	// answer, and it ended as its script implies.
	if len(st.runbooks) != len(subs) {
		add("%d runbooks submitted, %d in the database", len(subs), len(st.runbooks))
	}
	byRun := map[string]*storedRunbook{}
	for _, rb := range st.runbooks {
		byRun[rb.run] = rb
	}
	for _, sb := range subs {
		rb := st.runbooks[sb.id]
		if rb == nil {
			add("runbook %s (%s) is not in the database", sb.id, sb.run)
			continue
		}
		if rb.status != sb.kind.want && !(sb.kind.race && rb.status == rbtype.RunbookCancelled) {
			add("runbook %s (%s, %s) is %s, its script implies %s", sb.id, sb.run, sb.kind.name, rb.status, sb.kind.want)
		}
		if rb.status == rbtype.RunbookComplete {
			// Complete means every step completed or was skipped by the
			// runbook's own choice (a condition), never anything else.
			for _, s := range rb.steps {
				quiet := s.status == string(rbtype.StepSkipped) && rbtype.ErrorCode(s.errorCode).SkipsQuietly()
				if s.status != string(rbtype.StepComplete) && !quiet {
					add("runbook %s is complete but its step %s is %s (%s)", sb.id, s.key, s.status, s.errorCode)
				}
			}
		}
		out = append(out, ledgerViolations(rb)...)
	}

	// Effects: one per step, made under the step's own key, and the one
	// the step's result names.
	svc.mu.Lock()
	out = append(out, svc.misuse...)
	for _, rb := range st.runbooks {
		for _, s := range rb.steps {
			if s.verb != "soak.effect" && s.verb != "soak.task" || s.status != string(rbtype.StepComplete) || s.template() {
				continue
			}
			e := svc.effects[s.idemKey]
			if e == nil {
				add("step %s of runbook %s completed, but the service has no effect for its key %s", s.key, rb.id, s.idemKey)
				continue
			}
			if e.Run != rb.run || e.Step != s.key {
				add("step %s of runbook %s (%s) completed under key %s, which the service recorded for %s/%s", s.key, rb.id, rb.run, s.idemKey, e.Run, e.Step)
			}
			var res struct {
				EffectID string `json:"effect_id"`
			}
			if err := json.Unmarshal(s.result, &res); err != nil || res.EffectID != e.ID {
				add("step %s of runbook %s has result %s, the service made effect %s", s.key, rb.id, s.result, e.ID)
			}
		}
	}
	for _, e := range svc.effects {
		rb := byRun[e.Run]
		if rb == nil {
			add("effect %s is for run %s, which no runbook has", e.ID, e.Run)
			continue
		}
		if s := rb.steps[e.Step]; s == nil || s.status != string(rbtype.StepComplete) && rb.status != rbtype.RunbookCancelled {
			add("effect %s was made for step %s of runbook %s (%s), which did not complete", e.ID, e.Step, rb.id, rb.status)
		}
		if e.Prev != "" {
			if p := svc.byID[e.Prev]; p == nil || p.Run != e.Run {
				add("effect %s of %s/%s was given %q as its predecessor's effect, which the service never made for that run", e.ID, e.Run, e.Step, e.Prev)
			}
		}
	}
	svc.mu.Unlock()

	// Notifications: each one the daemon took was consumed, with its
	// first payload; nothing waits in the inbox.
	n.mu.Lock()
	out = append(out, n.problems...)
	cancelled := map[string]bool{} // correlation keys of cancelled runbooks' tasks
	svc.mu.Lock()
	for key, t := range svc.tasks {
		if rb := byRun[t.effect.Run]; rb != nil && rb.status == rbtype.RunbookCancelled {
			cancelled[key] = true
		}
	}
	svc.mu.Unlock()
	for key, payload := range n.delivered {
		got, ok := st.notifications[key]
		switch {
		case !ok:
			add("notification %s was accepted but is not in the inbox", key)
		case got.status == string(rbtype.NotificationIgnored) && cancelled[key]:
			// Its wait was cancelled first: consumed by being ignored.
		case got.status != string(rbtype.NotificationProcessed):
			add("notification %s was accepted and is %s, not processed", key, got.status)
		case !jsonEqual(got.result, payload):
			add("notification %s holds %s, the first payload sent was %s", key, got.result, payload)
		}
	}
	n.mu.Unlock()
	for key, got := range st.notifications {
		if got.status == string(rbtype.NotificationReceived) {
			add("notification %s is still waiting in the inbox", key)
		}
	}
	if st.activeLeases != 0 {
		add("%d leases are still held after every runbook finished", st.activeLeases)
	}
	return out
}

// ledgerViolations checks that a runbook's events are a valid sequence:
// submitted first; one terminal event, the runbook's status, with nothing
// after it but the cancellation requests a cancel sends once it has
// committed; no step succeeding twice or acting after it ended.
func ledgerViolations(rb *storedRunbook) []string {
	var out []string
	add := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("runbook %s: ", rb.id)+fmt.Sprintf(format, args...))
	}
	if len(rb.events) == 0 || rb.events[0].typ != rbtype.EventRunbookSubmitted {
		add("the ledger does not start with %s", rbtype.EventRunbookSubmitted)
	}
	ended := map[string]rbtype.EventType{}
	succeeded := map[string]int{}
	var terminal *storedEvent
	for i, e := range rb.events {
		// A cancel asks the outside world to stop once it has committed,
		// and records the answer: after the step's and the runbook's end.
		cancelRequest := e.typ == rbtype.EventInvocationCancelSent || e.typ == rbtype.EventInvocationCancelFailed
		if terminal != nil && !cancelRequest {
			add("event %d %s comes after the terminal %s", e.id, e.typ, terminal.typ)
		}
		if status, ok := runbookTerminal[e.typ]; ok {
			if terminal == nil {
				terminal = &rb.events[i]
				if status != rb.status {
					add("the ledger ends with %s but the runbook is %s", e.typ, rb.status)
				}
			}
			continue
		}
		if e.step == "" {
			continue
		}
		if prev, ok := ended[e.step]; ok && !(cancelRequest && prev == rbtype.EventStepCancelled) {
			add("step %s has %s (event %d) after %s", e.step, e.typ, e.id, prev)
		}
		if e.typ == rbtype.EventStepSucceeded {
			succeeded[e.step]++
		}
		if stepTerminal[e.typ] {
			ended[e.step] = e.typ
		}
	}
	if terminal == nil && !rb.status.Running() {
		add("the runbook is %s but its ledger has no terminal event", rb.status)
	}
	keys := make([]string, 0, len(rb.steps))
	for k := range rb.steps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := 0
		if rb.steps[k].status == string(rbtype.StepComplete) {
			want = 1
		}
		if succeeded[k] != want {
			add("step %s is %s and succeeded %d times in the ledger", k, rb.steps[k].status, succeeded[k])
		}
	}
	return out
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
