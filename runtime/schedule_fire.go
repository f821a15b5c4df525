package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// maxTicksScanned bounds the missed ticks a schedule's firing walks after
// a downtime (a minutely schedule down for ten weeks); past it, the
// latest tick is taken to be the last one walked.
const maxTicksScanned = 100_000

// ScheduleFiredData is the data of SCHEDULE_FIRED, on the runbook a tick
// made, and of SCHEDULE_SKIPPED, on the unfinished runbook that made a
// tick with overlap: skip do nothing.
type ScheduleFiredData struct {
	ScheduleID uuid.UUID `json:"schedule_id"`
	Name       string    `json:"name"`
	Tick       time.Time `json:"tick"`
	// Actor is who the tick's runbook acts for: the actor of the token
	// that made the schedule, as that token is now.
	Actor string `json:"actor,omitempty"`
}

// FireSchedules fires the ticks that have come, by the engine's clock, of
// every schedule not paused: the daemon's schedule sweep, run after each
// sweep of the tables, and exported so that tests fire it when they have
// moved the clock. Any number of engines may fire at once: each
// schedule's tick is fired in a transaction that holds the schedule's
// row, and its runbook's request key is schedule:<id>:<tick in UTC>, so a
// tick makes one runbook whatever happens. It returns how many runbooks
// it made.
func (e *Engine) FireSchedules(ctx context.Context) (int, error) {
	now := e.cfg.Clock()
	ids, err := e.store.DueSchedules(ctx, now, 1000)
	if err != nil {
		return 0, err
	}
	made := 0
	for _, id := range ids {
		created, err := e.fireSchedule(ctx, id, now)
		if err != nil {
			if ctx.Err() != nil {
				return made, err
			}
			e.log.Error("firing a schedule", "schedule_id", id, "err", err)
			continue
		}
		if created != uuid.Nil {
			made++
			e.wakeUp(created)
		}
	}
	return made, nil
}

// fireSchedule fires one schedule's due ticks at now, in one transaction
// holding its row, and returns the runbook it made, if any. Of the ticks
// that have come, the latest fires: with catch_up: none only if it came
// within ScheduleGrace (a tick on time), with latest in any case; older
// missed ticks are dropped. With overlap: skip, a tick that finds the
// previous runbook unfinished makes nothing and says so on that runbook
// (SCHEDULE_SKIPPED). The next tick is the first after now.
func (e *Engine) fireSchedule(ctx context.Context, id uuid.UUID, now time.Time) (uuid.UUID, error) {
	var made uuid.UUID
	err := inTx(ctx, e.store, func(tx driver.Tx) error {
		made = uuid.Nil
		s, err := tx.LockDueSchedule(ctx, id, now)
		if err != nil || s == nil {
			return err // not due any more, or another daemon fires it
		}
		tm, err := parseTiming(s.Cron, s.Timezone, now)
		if err != nil {
			// The zone database changed under a stored schedule: it waits
			// for someone to fix it, and says why, once an hour.
			return tx.TickSchedule(ctx, id, driver.ScheduleTick{NextFireAt: now.Add(time.Hour), LastError: err.Error()})
		}
		tick := latestTick(tm, s.NextFireAt, now)
		next := driver.ScheduleTick{NextFireAt: tm.next(now)}
		if s.CatchUp == driver.CatchUpNone && now.Sub(tick) > e.cfg.ScheduleGrace {
			return tx.TickSchedule(ctx, id, next) // missed while no daemon ran: dropped
		}
		next.LastTickAt = &tick
		if s.Overlap == driver.OverlapSkip && s.LastRunbookID != nil {
			st, err := e.store.RunbookStatus(ctx, *s.LastRunbookID)
			if err != nil && !errors.Is(err, driver.ErrNotFound) {
				return err
			}
			if err == nil && !st.Finished {
				next.Skipped = 1
				// Why this tick made nothing, where the operator looks (rbd
				// schedule list, the console's schedules): it stays until
				// a tick makes a runbook.
				next.LastError = fmt.Sprintf("the tick of %s was skipped: runbook %s, of the tick before, is still running (overlap: skip)",
					tick.UTC().Format(time.RFC3339), *s.LastRunbookID)
				if err := e.scheduleEvent(ctx, tx, *s.LastRunbookID, rbtype.EventScheduleSkipped, s, tick, ""); err != nil {
					return err
				}
				return tx.TickSchedule(ctx, id, next)
			}
		}
		rb, actor, err := e.submitTick(ctx, tx, s, tick)
		var refused *tickRefused
		if errors.As(err, &refused) {
			next.LastError = refused.Error()
			e.log.Warn("a schedule's tick made no runbook", "schedule_id", id, "tick", tick, "err", refused.Error())
			return tx.TickSchedule(ctx, id, next)
		}
		if err != nil {
			return err
		}
		next.LastRunbookID = &rb.ID
		if rb.Created {
			made = rb.ID
			if err := e.scheduleEvent(ctx, tx, rb.ID, rbtype.EventScheduleFired, s, tick, actor); err != nil {
				return err
			}
		}
		return tx.TickSchedule(ctx, id, next)
	})
	return made, err
}

// latestTick is the latest tick at or before now, from the first due one.
func latestTick(tm timing, first, now time.Time) time.Time {
	latest := first
	for n := 0; n < maxTicksScanned; n++ {
		t := tm.next(latest)
		if t.IsZero() || t.After(now) {
			break
		}
		latest = t
	}
	return latest
}

// tickRefused is a tick that could not make its runbook for a reason of
// the schedule's own (its source no longer compiles, its inputs no longer
// fit, its scope no longer admits it): recorded on the schedule as its
// last error, and the tick is not fired again.
type tickRefused struct{ err error }

func (r *tickRefused) Error() string {
	var ce *CompileError
	if errors.As(r.err, &ce) && len(ce.Diagnostics) > 0 {
		return fmt.Sprintf("the schedule's runbook does not compile: %s", ce.Diagnostics[0].Message)
	}
	return r.err.Error()
}

// submitTick submits a tick's runbook in tx, under the schedule's tenant
// and what the token that made it may do now (tickScope), keyed
// schedule:<id>:<tick>; it returns the runbook and who it acts for.
func (e *Engine) submitTick(ctx context.Context, tx driver.Tx, s *driver.Schedule, tick time.Time) (*apitype.Submitted, string, error) {
	scope, actor, err := e.tickScope(s)
	if err != nil {
		return nil, "", &tickRefused{err}
	}
	ctx = WithScope(ctx, scope)
	plan, err := e.planOfSchedule(ctx, s.Source, s.Plan, s.Filename)
	if err != nil {
		return nil, "", &tickRefused{err}
	}
	if err := e.admitTick(ctx, s, plan); err != nil {
		return nil, "", &tickRefused{err}
	}
	var inputs map[string]any
	if v, err := rbtype.DecodeJSON(s.Inputs); err == nil {
		inputs, _ = v.(map[string]any)
	}
	key := fmt.Sprintf("schedule:%s:%s", s.ID, tick.UTC().Format(time.RFC3339))
	n, err := e.newRunbook(ctx, Submission{Plan: plan, Inputs: inputs, Mode: s.Mode, IdempotencyKey: key, Actor: actor})
	if err != nil {
		return nil, "", &tickRefused{err}
	}
	sub, err := e.createRunbook(ctx, tx, n, key)
	if errors.Is(err, rbtype.ErrConflict) {
		// The tick made its runbook before, from what the schedule was
		// then (it changed since, and the daemon died before moving on).
		d, derr := e.derivationIn(ctx, tx)
		if derr != nil {
			return nil, "", derr
		}
		return &apitype.Submitted{ID: d.RunbookID(n.RequestKey)}, actor, nil
	}
	return sub, actor, err
}

// admitTick is where a tick's runbook is admitted under the scope of the
// token that made the schedule (docs/design/semantics.md section 14:
// "checked again at each tick against the policy of that day"). ctx
// carries that scope, restored from the schedule (its verbs= and
// max_risk included); the tenant is the schedule's. The plan is judged by
// that scope and the policy in force now (docs/design/semantics.md
// section 10): a refusal is the schedule's last error, and the tick makes
// nothing. newRunbook then freezes the gates the policy decides, as for
// any submission.
func (e *Engine) admitTick(ctx context.Context, s *driver.Schedule, plan *compiler.Plan) error {
	if !sees(ctx, s.Tenant) {
		return fmt.Errorf("%w: the schedule's scope does not reach its tenant %s", rbtype.ErrInvalid, s.Tenant)
	}
	_, err := e.admit(ctx, s.Tenant, plan, plan.Steps)
	return err
}

// scheduleEvent writes SCHEDULE_FIRED or SCHEDULE_SKIPPED on a runbook,
// under its lock.
func (e *Engine) scheduleEvent(ctx context.Context, tx driver.Tx, runbookID uuid.UUID, typ rbtype.EventType, s *driver.Schedule, tick time.Time, actor string) error {
	if err := tx.LockRunbooks(ctx, []uuid.UUID{runbookID}); err != nil {
		return err
	}
	ev, err := machine.NewEvent(runbookID, typ, e.workerID, nil, ScheduleFiredData{ScheduleID: s.ID, Name: s.Name, Tick: tick.UTC(), Actor: actor})
	if err != nil {
		return err
	}
	_, err = tx.WriteAdvance(ctx, driver.AdvanceWrite{Events: []driver.Event{ev}})
	return err
}
