package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// Notification is what an external process reports for a correlation key.
type Notification struct {
	CorrelationKey string
	// Status is completed or failed.
	Status rbtype.NotificationOutcome
	Result json.RawMessage
	// ErrorCode and ErrorMessage describe a failure; a retryable code lets
	// the step retry.
	ErrorCode    rbtype.ErrorCode
	ErrorMessage string
	// Usage is what the external work used, if it says (docs/design/semantics.md
	// section 3): added to the resumed attempt's ledger row.
	Usage driver.Usage
	// Sender is the span of the process that sent it (its traceparent
	// header); the resume it causes links to it. It is not part of the
	// payload: a repeat from another span is the same notification.
	Sender trace.SpanContext
}

// notificationPayload is what a notification's payload hash covers. Its
// fields are in key order, so that it encodes as the map it replaced did
// and hashes stored by earlier releases still match their repeats.
type notificationPayload struct {
	ErrorCode    rbtype.ErrorCode           `json:"error_code"`
	ErrorMessage string                     `json:"error_message"`
	Result       any                        `json:"result"`
	Status       rbtype.NotificationOutcome `json:"status"`
	// Usage is part of what the external work reports: a repeat that says
	// it used something else is another report, a conflict. Absent, it
	// leaves the hash as it was before notifications carried usage.
	Usage *driver.Usage `json:"usage,omitempty"`
}

// Notify stores a notification in the inbox and wakes the runbook waiting
// for it. A repeat with the same payload is a duplicate; the same key with
// another payload is a conflict and is refused.
func (e *Engine) Notify(ctx context.Context, n Notification) (rbtype.InboxResult, error) {
	if n.CorrelationKey == "" {
		return 0, fmt.Errorf("%w: correlation_key is required", rbtype.ErrInvalid)
	}
	if len(n.CorrelationKey) > machine.MaxKeyLength {
		return 0, fmt.Errorf("%w: correlation_key is %d bytes long; at most %d are allowed", rbtype.ErrInvalid, len(n.CorrelationKey), machine.MaxKeyLength)
	}
	if n.Status != rbtype.OutcomeCompleted && n.Status != rbtype.OutcomeFailed {
		return 0, fmt.Errorf("%w: status must be %q or %q", rbtype.ErrInvalid, rbtype.OutcomeCompleted, rbtype.OutcomeFailed)
	}
	if n.Status == rbtype.OutcomeFailed && n.ErrorCode == "" {
		// A failure that does not say why would fail the step as
		// INTERNAL with no message, which nobody can act on, and it
		// would take the key for good.
		return 0, fmt.Errorf("%w: a failed notification needs error.code (and, best, error.message) saying why", rbtype.ErrInvalid)
	}
	if n.ErrorCode != "" && !errorCodeShape.MatchString(string(n.ErrorCode)) {
		// The code is shown, counted and matched as the taxonomy's are;
		// any text (an escape sequence, a paragraph) would be shown raw.
		return 0, fmt.Errorf("%w: error.code %s must be like the taxonomy's codes: upper-case letters, digits and _, at most 64 (INVALID_INPUT, CARD_DECLINED)",
			rbtype.ErrInvalid, machine.ShortKey(string(n.ErrorCode)))
	}
	result, err := machine.CanonicalJSON(n.Result)
	if err != nil {
		return 0, fmt.Errorf("%w: result: %v", rbtype.ErrInvalid, err)
	}
	if err := handler.CheckUsage(n.Usage); err != nil {
		return 0, err
	}
	body := notificationPayload{Status: n.Status, Result: result, ErrorCode: n.ErrorCode, ErrorMessage: n.ErrorMessage}
	if !n.Usage.IsZero() {
		body.Usage = &n.Usage
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return 0, fmt.Errorf("%w: result: %v", rbtype.ErrInvalid, err)
	}
	var tenant string
	if s, ok := scopeOf(ctx); ok && !s.All {
		tenant = s.Tenant
	}
	stored := driver.Notification{
		CorrelationKey: n.CorrelationKey, PayloadHash: machine.HashJSON(payload), Outcome: n.Status,
		Result: n.Result, ErrorCode: n.ErrorCode, ErrorMessage: n.ErrorMessage, Tenant: tenant,
		TraceParent: machine.TraceParentOf(n.Sender), Usage: n.Usage,
	}
	calls := e.working.Load()
	// Without a worker here (rbd --worker=false, or stopping), or with as
	// many resumes in place as advancers already, the inbox row and its
	// wake-up are the whole of it, and a worker resumes.
	inPlace, why := false, "no_worker"
	if calls != nil {
		inPlace, why = e.takeResumer(), "busy"
	}
	if inPlace {
		defer func() { <-e.resumers }()
	}
	for tries := 1; ; tries++ {
		var arrived arrival
		err := inTx(ctx, e.store, func(tx driver.Tx) (err error) {
			arrived, err = e.arrive(ctx, tx, stored, result, inPlace)
			return err
		})
		if errors.Is(err, errParkedMeanwhile) && tries < 3 {
			continue
		}
		if err != nil {
			return arrived.result, err
		}
		if arrived.woke != uuid.Nil {
			if arrived.failed {
				why = "failed"
			}
			e.metrics.handedOn(why)
			e.wakeUp(arrived.woke)
		}
		if arrived.resumed.settled != nil {
			// Resumed in the notification's own transaction: one commit
			// instead of a wake-up, a claim and an advance; the steps it
			// readied are leased to this worker and start now, with no
			// NOTIFY round trip.
			e.committed(ctx, arrived.resumed)
			e.metrics.resumedInPlace()
			for _, t := range arrived.resumed.settled.States {
				if t.ExpansionDeferred {
					e.wakeUp(t.Rb.ID) // an advancer expands its lists now
				}
			}
			for _, pc := range arrived.resumed.calls {
				go e.startCall(*calls, pc)
			}
		}
		return arrived.result, nil
	}
}

// errorCodeShape is the shape of the error taxonomy's codes
// (docs/design/runtime.md, "Errors"), which a notification's error.code
// must have: a code of the sender's own is allowed, and final.
var errorCodeShape = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// errParkedMeanwhile: the step parked between the look at its wait and
// the insert, and its runbook is locked by another transaction. Waiting
// for that lock while holding the correlation key's could deadlock with
// an advance, so the transaction starts again; it then finds the wait
// first and locks in order. After a few tries it is transient: the sender
// retries (the API answers 503).
var errParkedMeanwhile = fmt.Errorf("%w: the step parked meanwhile; retry in lock order", driver.ErrTransient)

// arrival is what a notification's transaction did: what the inbox said,
// the resume in place, if there was one, and whether it left its runbook
// due for a worker instead.
type arrival struct {
	result  rbtype.InboxResult
	resumed advanced
	woke    uuid.UUID
	// failed: a resume in place was tried and could not be written.
	failed bool
}

// arrive is a notification's transaction, in tx. The round trips, besides
// BEGIN and COMMIT: the wait's look-up; then, pipelined, the runbook's
// lock, the key's lock, the insert, what the key held before, and, to
// resume in place, a savepoint and the runbook's state; then the resume's
// write (or the wake-up). An advance locks its runbook, then the
// correlation keys of the parks it writes; taking the key's lock first
// would deadlock with one, so the wait is found first (an invocation's
// runbook never changes) and its runbook locked before the key.
func (e *Engine) arrive(ctx context.Context, tx driver.Tx, n driver.Notification, result any, inPlace bool) (arrival, error) {
	got := arrival{result: rbtype.InboxAccepted}
	var locked uuid.UUID
	target, err := tx.WaitTarget(ctx, n.CorrelationKey)
	switch {
	case errors.Is(err, driver.ErrNotFound):
	case err != nil:
		return got, err
	case (n.Tenant != "" && target.Tenant != n.Tenant) || !sees(ctx, target.Tenant):
		// A tenant's secret resolves only its tenant's waits. Another
		// tenant's is not there for it: the notification is kept in its
		// own tenant's namespace, where nothing waits on the key, and
		// answered as any such one is (202), so the answer tells nothing
		// about other tenants' waits; StoreNotification looks only at
		// waits of its tenant. A runbook's tenant, like an invocation's
		// runbook, never changes, so what this look-up found holds.
	default:
		if n.Outcome == rbtype.OutcomeCompleted {
			if err := e.checkNotifiedResult(ctx, tx, target, result); err != nil {
				return got, err
			}
		}
		locked = target.RunbookID
	}
	resume := inPlace && locked != uuid.Nil
	st, err := tx.StoreNotification(ctx, n, driver.StoreOptions{Lock: locked, Savepoint: resume, Load: resume, Day: e.cfg.Clock(),
		AllSpend: e.machine.Policy().CapsTenantSpend()})
	switch {
	case err != nil:
		return got, err
	case !st.Inserted && st.PayloadHash == n.PayloadHash:
		got.result = rbtype.InboxDuplicate
		return got, nil
	case !st.Inserted:
		got.result = rbtype.InboxConflict
		return got, nil
	case !st.Parked:
		return got, nil // not parked yet: the park will consume it
	case st.WaitStatus != rbtype.InvocationActive:
		return got, tx.IgnoreNotifications(ctx, []int64{st.ID})
	}
	if st.RunbookID != locked {
		// Parked since the first look: its advance has committed, but
		// another may hold the runbook now.
		ok, err := tx.TryLockRunbook(ctx, st.RunbookID)
		if err != nil {
			return got, err
		}
		if !ok {
			return got, errParkedMeanwhile
		}
	}
	if resume && st.RunbookID == locked {
		// The lists the result holds are expanded by the advance that
		// follows, not here: expansion takes time in the size of the
		// lists, and the webhook's transaction holds the runbook's lock
		// and a connection (docs/reliability.md, "Under attack").
		done, err := e.advanceIn(ctx, tx, []uuid.UUID{locked}, machine.Inputs{DeferExpansion: true}, st.State)
		if err == nil {
			got.resumed = done
			return got, nil
		}
		// The resume cannot be written: its work is undone, and the
		// runbook woken as without it; the notification is kept either
		// way.
		got.failed = true
		if err := tx.RollbackToSavepoint(ctx); err != nil {
			return got, err
		}
	}
	got.woke = st.RunbookID
	return got, tx.Wake(ctx, []uuid.UUID{st.RunbookID})
}

// takeResumer takes a place among the notifications resumed in place, if
// one is free, without waiting.
func (e *Engine) takeResumer() bool {
	select {
	case e.resumers <- struct{}{}:
		return true
	default:
		return false
	}
}

// checkNotifiedResult refuses a result that does not fit the output_schema
// of the verb whose wait it ends: accepted, it would fail the step when
// consumed, and take the key for good; refused (ErrSchema, 422), nothing
// is stored and the sender can fix it and send again. A key no step has
// parked with yet, or whose wait has ended, is not checked here: the
// first is kept for the step that will park, the second is a duplicate
// or ignored, and the step's own check still applies when it is consumed.
//
// It reads in the notification's transaction, tx: a second connection
// from the pool, taken while this one is held, could wait for ever when
// every connection is held by a webhook doing the same.
func (e *Engine) checkNotifiedResult(ctx context.Context, tx driver.Tx, target driver.WaitTarget, result any) error {
	if target.Status != rbtype.InvocationActive {
		return nil
	}
	plans, err := e.plansOf(ctx, tx, []*driver.Runbook{{ID: target.RunbookID, PlanHash: target.PlanHash}})
	if err != nil {
		return err
	}
	info, ok := plans[target.PlanHash].Plan.Verbs[target.Verb]
	if !ok || info.OutputSchema == nil {
		return nil
	}
	if result == nil {
		result = map[string]any{} // an empty result completes a step with {}
	}
	if err := info.OutputSchema.Validate(result); err != nil {
		return fmt.Errorf("%w: the result does not match %s's output_schema (step %q waits on this key): %v", rbtype.ErrSchema, target.Verb, target.StepKey, err)
	}
	return nil
}

// noWait is ErrNotFound for a correlation key no step waits on, or none
// the caller may resolve (another tenant's wait): the two are told apart
// by nothing, not even the message.
func noWait(key string) error {
	return fmt.Errorf("%w: no step waits on correlation key %s", rbtype.ErrNotFound, machine.ShortKey(key))
}
