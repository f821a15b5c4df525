package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// A schedule acts for the token that made it (docs/runtime.md,
// "Schedules"; docs/reliability.md, "Under attack"). It is admitted as a
// submission of that token when it is made or changed, and again at each
// tick under what that token may do then; only that token, or an admin,
// changes or deletes it. A tenant holds at most MaxSchedulesPerTenant of
// them, each ticking at most once a MinScheduleInterval.

// The default bounds on schedules.
const (
	DefaultMaxSchedulesPerTenant = 100
	DefaultMinScheduleInterval   = time.Minute
)

// storedScope is the scope a schedule was made (or last defined) with.
func storedScope(s *driver.Schedule) (Scope, error) {
	var scope Scope
	if len(s.Scope) == 0 {
		return scope, nil
	}
	if err := json.Unmarshal(s.Scope, &scope); err != nil {
		return scope, fmt.Errorf("the schedule's stored scope does not read: %v", err)
	}
	return scope, nil
}

// mayChangeSchedule reports whether ctx may change or delete s: an admin,
// the engine's own work, or the token that made it. A schedule made before
// tokens were fingerprinted is its actor's.
func mayChangeSchedule(ctx context.Context, s *driver.Schedule) error {
	caller, ok := scopeOf(ctx)
	if !ok || caller.All {
		return nil
	}
	made, err := storedScope(s)
	if err != nil {
		return err
	}
	switch {
	case made.Token != "" && made.Token == caller.Token:
		return nil
	case made.Token == "" && caller.Token == "":
		return nil // an open daemon: no one to tell apart
	case made.Token == "" && s.Actor != "" && s.Actor == caller.Actor:
		return nil
	}
	return fmt.Errorf("%w: schedule %s was made by another token (actor %q); only that token or an admin may change or delete it",
		rbtype.ErrForbidden, s.ID, s.Actor)
}

// callerScope is the scope a schedule made or defined by ctx keeps: the
// caller's, in its tenant, with its actor.
func callerScope(ctx context.Context) (Scope, string) {
	scope, _ := scopeOf(ctx)
	scope.Tenant = tenantOf(ctx)
	actor, _ := actorOf(ctx, "")
	scope.Actor = actor
	return scope, actor
}

// tickScope is the scope a tick of s runs under: what the token that made
// it may do now (Config.TokenScope), in the schedule's tenant; refused when
// that token is no longer accepted, may no longer submit, or no longer
// reaches the tenant.
func (e *Engine) tickScope(s *driver.Schedule) (Scope, string, error) {
	made, err := storedScope(s)
	if err != nil {
		return Scope{}, "", err
	}
	actor := s.Actor
	if made.Token != "" && e.cfg.TokenScope != nil {
		now, ok := e.cfg.TokenScope(made.Token)
		if !ok {
			return Scope{}, "", fmt.Errorf("%w: the token that made this schedule (actor %q) is no longer accepted, or may no longer submit; "+
				"a token that may should define it again (PATCH) to run it as theirs", rbtype.ErrForbidden, s.Actor)
		}
		if !now.All && now.Tenant != s.Tenant {
			return Scope{}, "", fmt.Errorf("%w: the token that made this schedule no longer reaches its tenant %s", rbtype.ErrForbidden, s.Tenant)
		}
		made = now
		if now.Actor != "" {
			actor = now.Actor
		}
	}
	made.Tenant = s.Tenant
	return made, actor, nil
}

// admitSchedule admits what a schedule's ticks will submit as a
// submission of the caller now: the same checks, limits and policy
// (newRunbook's), nothing stored.
func (e *Engine) admitSchedule(ctx context.Context, plan *compiler.Plan, spec *ScheduleSpec) error {
	_, err := e.newRunbook(ctx, Submission{Plan: plan, Inputs: spec.Inputs, Mode: spec.Mode, IdempotencyKey: "schedule"})
	return err
}

// checkInterval refuses a timing whose ticks come closer together than
// MinScheduleInterval, over its next ticks.
func (e *Engine) checkInterval(tm timing, expr string, now time.Time) error {
	prev := tm.next(now)
	for i := 0; i < 60 && !prev.IsZero(); i++ {
		next := tm.next(prev)
		if next.IsZero() {
			return nil
		}
		if gap := next.Sub(prev); gap < e.cfg.MinScheduleInterval {
			return &machine.LimitError{Name: "min-schedule-interval", Max: int(e.cfg.MinScheduleInterval / time.Second), Got: int(gap / time.Second),
				What: fmt.Sprintf("cron %q ticks %%d s apart", expr)}
		}
		prev = next
	}
	return nil
}

// checkScheduleQuota refuses a tenant's schedule past MaxSchedulesPerTenant.
func (e *Engine) checkScheduleQuota(ctx context.Context, tenant string) error {
	list, err := e.store.Schedules(ctx, tenant)
	if err != nil {
		return err
	}
	if len(list) >= e.cfg.MaxSchedulesPerTenant {
		return &machine.LimitError{Name: "max-schedules-per-tenant", Max: e.cfg.MaxSchedulesPerTenant, Got: len(list) + 1,
			What: "the tenant would have %d schedules"}
	}
	return nil
}

// callerToken is the fingerprint of ctx's token, "" without one.
func callerToken(ctx context.Context) string {
	scope, _ := scopeOf(ctx)
	return scope.Token
}
