package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// Schedules (docs/design/semantics.md section 14): a runbook submitted at
// each tick of a cron expression in an IANA time zone. The expression is
// parsed, and its ticks worked out, by github.com/robfig/cron/v3, daylight
// saving included, as that library does it (docs/runtime.md, "Schedules").

// ScheduleSpec is a schedule as it is asked for.
type ScheduleSpec struct {
	Name string
	// Cron has five fields (minute hour day-of-month month day-of-week)
	// or is a name such as @hourly, @daily or @every 90m.
	Cron string
	// Timezone is an IANA time zone (Europe/London); empty means UTC.
	Timezone string
	// Source (compiled at every tick with the catalogue of the day) or
	// Plan (checked against it) is what each tick submits.
	Source   string
	Plan     json.RawMessage
	Filename string
	Inputs   map[string]any
	Mode     rbtype.Mode
	// Overlap is skip (the default) or allow; CatchUp none (the default)
	// or latest.
	Overlap driver.Overlap
	CatchUp driver.CatchUp
}

// SchedulePatch changes a schedule: each field set replaces its value.
// Paused pauses or resumes it; a resumed schedule fires from its next
// tick after now, never the ticks it missed while paused.
type SchedulePatch struct {
	Paused   *bool
	Name     *string
	Cron     *string
	Timezone *string
	// Source or Plan (with Filename) replaces what the ticks submit.
	Source   *string
	Plan     json.RawMessage
	Filename *string
	Inputs   map[string]any
	Mode     *rbtype.Mode
	Overlap  *driver.Overlap
	CatchUp  *driver.CatchUp
}

// FieldError is a request refused because of one of its fields, which it
// names: the API answers 400 (or 422 for a source that does not compile)
// with "field".
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// fieldErr wraps an error as the fault of a field.
func fieldErr(field string, err error) error { return &FieldError{Field: field, Err: err} }

// invalidField is ErrInvalid for a field.
func invalidField(field, format string, args ...any) error {
	return fieldErr(field, fmt.Errorf("%w: %s", rbtype.ErrInvalid, fmt.Sprintf(format, args...)))
}

// scheduleName is what a schedule may be called: it is shown in lists and
// unique in its tenant.
var scheduleName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._:-]{0,99}$`)

// cronParser reads five fields or a descriptor, as ParseStandard does.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// timing is a schedule's cron expression in its time zone.
type timing struct {
	sched cron.Schedule
	loc   *time.Location
}

// next is the first tick strictly after t, in UTC; zero when there is
// none within the library's horizon.
func (tm timing) next(t time.Time) time.Time {
	n := tm.sched.Next(t.In(tm.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// parseTiming checks a cron expression and a time zone.
func parseTiming(expr, zone string, now time.Time) (timing, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return timing{}, invalidField("cron", "cron is required: five fields (minute hour day-of-month month day-of-week) or a name such as @hourly")
	}
	if strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") {
		return timing{}, invalidField("cron", "cron %q names a time zone; give it in timezone instead", expr)
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return timing{}, invalidField("cron", "cron %q does not parse: %v (five fields: minute hour day-of-month month day-of-week, or @yearly, @monthly, @weekly, @daily, @hourly, @every DURATION)", expr, err)
	}
	if zone == "Local" {
		return timing{}, invalidField("timezone", "timezone %q depends on the daemon's machine; name an IANA time zone such as Europe/London", zone)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return timing{}, invalidField("timezone", "timezone %q is not an IANA time zone (such as Europe/London or America/New_York)", zone)
	}
	tm := timing{sched: sched, loc: loc}
	if tm.next(now).IsZero() {
		return timing{}, invalidField("cron", "cron %q never fires", expr)
	}
	return tm, nil
}

// scheduleDefaults fills what a spec leaves out and checks the rest but
// the source.
func scheduleDefaults(s *ScheduleSpec) error {
	s.Name = strings.TrimSpace(s.Name)
	if !scheduleName.MatchString(s.Name) {
		return invalidField("name", "name %q must be 1 to 100 letters, digits, spaces and . _ : -, starting with a letter or digit", s.Name)
	}
	if s.Timezone == "" {
		s.Timezone = "UTC"
	}
	if s.Overlap == "" {
		s.Overlap = driver.OverlapSkip
	}
	if s.Overlap != driver.OverlapSkip && s.Overlap != driver.OverlapAllow {
		return invalidField("overlap", "overlap %q must be skip or allow", s.Overlap)
	}
	if s.CatchUp == "" {
		s.CatchUp = driver.CatchUpNone
	}
	if s.CatchUp != driver.CatchUpNone && s.CatchUp != driver.CatchUpLatest {
		return invalidField("catch_up", "catch_up %q must be none or latest", s.CatchUp)
	}
	if s.Mode == "" {
		s.Mode = rbtype.ModeExecute
	}
	if !slices.Contains(rbtype.Modes, s.Mode) {
		return invalidField("mode", "mode %q must be execute, dry_run or draft_only", s.Mode)
	}
	switch {
	case s.Source != "" && len(s.Plan) > 0:
		return invalidField("source", `give "source" or "plan", not both`)
	case s.Source == "" && len(s.Plan) == 0:
		return invalidField("source", `a schedule needs "source" (runbook text) or "plan" (a compiled plan)`)
	}
	if s.Filename == "" {
		s.Filename = "scheduled.rbk"
		if len(s.Plan) > 0 {
			s.Filename = "plan.json"
		}
	}
	return nil
}

// planOfSchedule compiles a schedule's source, or checks its plan, with
// the engine's catalogue.
func (e *Engine) planOfSchedule(ctx context.Context, source string, plan json.RawMessage, filename string) (*compiler.Plan, error) {
	if e.cfg.Catalogue == nil {
		return nil, fmt.Errorf("%w: this daemon has no verb catalogue to compile schedules with (start it with --verbs)", rbtype.ErrInvalid)
	}
	if source != "" {
		if err := machine.CheckSourceBytes(e.cfg.Limits, []byte(source)); err != nil {
			return nil, fieldErr("source", err)
		}
		opts, cat, outside := e.scopedCompile(ctx, e.compileOptions())
		p, diags := opts.CompileSource(filename, []byte(source), cat)
		if err := outside(); err != nil {
			return nil, err
		}
		if diags.HasErrors() {
			return nil, fieldErr("source", &CompileError{Diagnostics: diags})
		}
		return p, nil
	}
	if err := planOutsideScope(ctx, plan); err != nil {
		return nil, err
	}
	p, diags := compiler.ReadPlan(filename, plan, e.cfg.Catalogue)
	if diags.HasErrors() {
		return nil, fieldErr("plan", &CompileError{Diagnostics: diags})
	}
	return p, nil
}

// checkScheduleInputs checks inputs against the plan, as a submission's.
func checkScheduleInputs(p *compiler.Plan, inputs map[string]any) error {
	if err := checkInputs(p.Inputs, inputs, nil); err != nil {
		return fieldErr("inputs", err)
	}
	if err := checkInputsFit(p, inputs); err != nil {
		return fieldErr("inputs", err)
	}
	return nil
}

// checkSchedule fills a spec's defaults and checks it whole, as a
// creation or a change: its timing and its interval, its source or plan
// against the catalogue, its inputs against the plan, and what it submits
// admitted as the caller's submission would be (schedule_guard.go). It
// returns the timing and the inputs as stored.
func (e *Engine) checkSchedule(ctx context.Context, spec *ScheduleSpec, now time.Time) (timing, json.RawMessage, error) {
	if err := scheduleDefaults(spec); err != nil {
		return timing{}, nil, err
	}
	tm, err := parseTiming(spec.Cron, spec.Timezone, now)
	if err != nil {
		return timing{}, nil, err
	}
	if err := e.checkInterval(tm, spec.Cron, now); err != nil {
		return timing{}, nil, fieldErr("cron", err)
	}
	plan, err := e.planOfSchedule(ctx, spec.Source, spec.Plan, spec.Filename)
	if err != nil {
		return timing{}, nil, err
	}
	if err := checkScheduleInputs(plan, spec.Inputs); err != nil {
		return timing{}, nil, err
	}
	if err := e.admitSchedule(ctx, plan, spec); err != nil {
		return timing{}, nil, err
	}
	inputs, err := json.Marshal(orEmpty(spec.Inputs))
	if err != nil {
		return timing{}, nil, invalidField("inputs", "inputs do not encode: %v", err)
	}
	return tm, inputs, nil
}

// CreateSchedule checks and stores a schedule, in the caller's tenant and
// with the caller's scope. Its first tick is the first after now.
func (e *Engine) CreateSchedule(ctx context.Context, spec ScheduleSpec) (*apitype.ScheduleView, error) {
	now := e.cfg.Clock()
	tm, inputs, err := e.checkSchedule(ctx, &spec, now)
	if err != nil {
		return nil, err
	}
	scope, actor := callerScope(ctx)
	if err := e.checkScheduleQuota(ctx, scope.Tenant); err != nil {
		return nil, err
	}
	scopeJSON, err := json.Marshal(scope)
	if err != nil {
		return nil, err
	}
	s := driver.Schedule{
		ID: uuid.New(), Tenant: scope.Tenant, Name: spec.Name, Cron: strings.TrimSpace(spec.Cron), Timezone: spec.Timezone,
		Source: spec.Source, Plan: spec.Plan, Filename: spec.Filename, Inputs: inputs, Mode: spec.Mode,
		Overlap: spec.Overlap, CatchUp: spec.CatchUp, Actor: actor, Scope: scopeJSON, NextFireAt: tm.next(now),
	}
	if err := e.store.CreateSchedule(ctx, s); err != nil {
		if errors.Is(err, driver.ErrConflict) {
			return nil, fieldErr("name", fmt.Errorf("%w: this tenant has a schedule named %q already", rbtype.ErrConflict, spec.Name))
		}
		return nil, err
	}
	return e.Schedule(ctx, s.ID)
}

// visibleSchedule loads a schedule the caller may see; another tenant's
// is ErrNotFound, as if it did not exist.
func (e *Engine) visibleSchedule(ctx context.Context, id uuid.UUID) (*driver.Schedule, error) {
	s, err := e.store.Schedule(ctx, id)
	if errors.Is(err, driver.ErrNotFound) || err == nil && !sees(ctx, s.Tenant) {
		return nil, fmt.Errorf("%w: no schedule %s", rbtype.ErrNotFound, id)
	}
	return s, err
}

// Schedule returns one schedule's view.
func (e *Engine) Schedule(ctx context.Context, id uuid.UUID) (*apitype.ScheduleView, error) {
	s, err := e.visibleSchedule(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.scheduleView(ctx, s), nil
}

// Schedules lists the caller's tenant's schedules (an admin's: tenant's,
// or every tenant's for ""), by name.
func (e *Engine) Schedules(ctx context.Context, tenant string) ([]apitype.ScheduleView, error) {
	list, err := e.store.Schedules(ctx, listTenant(ctx, tenant))
	if err != nil {
		return nil, err
	}
	out := make([]apitype.ScheduleView, 0, len(list))
	for i := range list {
		out = append(out, *e.scheduleView(ctx, &list[i]))
	}
	return out, nil
}

func (e *Engine) scheduleView(ctx context.Context, s *driver.Schedule) *apitype.ScheduleView {
	v := &apitype.ScheduleView{
		ID: s.ID, Name: s.Name, Cron: s.Cron, Timezone: s.Timezone, Filename: s.Filename, Source: s.Source, Plan: s.Plan,
		Inputs: s.Inputs, Mode: s.Mode, Overlap: s.Overlap, CatchUp: s.CatchUp, Paused: s.Paused, Actor: s.Actor,
		LastTickAt: s.LastTickAt, LastError: s.LastError, Skipped: s.Skipped, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
	}
	if !s.Paused {
		next := s.NextFireAt.UTC()
		v.NextFireAt = &next
	}
	if s.LastRunbookID != nil {
		v.LastRunbook = &apitype.LastRunbookView{ID: *s.LastRunbookID}
		if st, err := e.store.RunbookStatus(ctx, *s.LastRunbookID); err == nil {
			v.LastRunbook.Status = st.Status
		}
	}
	return v
}

// UpdateSchedule changes a schedule (PATCH): pauses or resumes it, or
// replaces parts of its definition, checked as at its creation. A change
// of its timing, and a resume, move its next tick to the first after now.
func (e *Engine) UpdateSchedule(ctx context.Context, id uuid.UUID, p SchedulePatch) (*apitype.ScheduleView, error) {
	s, err := e.visibleSchedule(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := mayChangeSchedule(ctx, s); err != nil {
		return nil, err
	}
	spec := ScheduleSpec{Name: s.Name, Cron: s.Cron, Timezone: s.Timezone, Source: s.Source, Plan: s.Plan, Filename: s.Filename,
		Mode: s.Mode, Overlap: s.Overlap, CatchUp: s.CatchUp}
	if err := json.Unmarshal(s.Inputs, &spec.Inputs); err != nil {
		return nil, err
	}
	retime := false
	set := func(dst *string, v *string, timing bool) {
		if v != nil {
			*dst, retime = *v, retime || timing
		}
	}
	set(&spec.Name, p.Name, false)
	set(&spec.Cron, p.Cron, true)
	set(&spec.Timezone, p.Timezone, true)
	set(&spec.Filename, p.Filename, false)
	if p.Source != nil {
		spec.Source, spec.Plan = *p.Source, nil
	}
	if len(p.Plan) > 0 {
		spec.Plan, spec.Source = p.Plan, ""
	}
	if p.Inputs != nil {
		spec.Inputs = p.Inputs
	}
	if p.Mode != nil {
		spec.Mode = *p.Mode
	}
	if p.Overlap != nil {
		spec.Overlap = *p.Overlap
	}
	if p.CatchUp != nil {
		spec.CatchUp = *p.CatchUp
	}
	now := e.cfg.Clock()
	tm, inputs, err := e.checkSchedule(ctx, &spec, now)
	if err != nil {
		return nil, err
	}
	if made, _ := storedScope(s); p.Source != nil || len(p.Plan) > 0 || p.Inputs != nil || p.Mode != nil || made.Token == callerToken(ctx) {
		// Who defines what the ticks run is who they run as: the
		// maker, with what it may do now, or an admin who rewrote it.
		scope, actor := callerScope(ctx)
		if s.Scope, err = json.Marshal(scope); err != nil {
			return nil, err
		}
		s.Actor = actor
	}
	if p.Paused != nil {
		if s.Paused && !*p.Paused {
			retime = true // resumed: from now on, never the ticks it slept through
		}
		s.Paused = *p.Paused
	}
	if retime {
		s.NextFireAt = tm.next(now)
	}
	s.Name, s.Cron, s.Timezone, s.Source, s.Plan, s.Filename = spec.Name, strings.TrimSpace(spec.Cron), spec.Timezone, spec.Source, spec.Plan, spec.Filename
	s.Inputs, s.Mode, s.Overlap, s.CatchUp = inputs, spec.Mode, spec.Overlap, spec.CatchUp
	if err := e.store.UpdateSchedule(ctx, *s); err != nil {
		if errors.Is(err, driver.ErrConflict) {
			return nil, fieldErr("name", fmt.Errorf("%w: this tenant has a schedule named %q already", rbtype.ErrConflict, spec.Name))
		}
		return nil, err
	}
	return e.Schedule(ctx, id)
}

// DeleteSchedule deletes a schedule; the runbooks it made stay.
func (e *Engine) DeleteSchedule(ctx context.Context, id uuid.UUID) error {
	s, err := e.visibleSchedule(ctx, id)
	if err != nil {
		return err
	}
	if err := mayChangeSchedule(ctx, s); err != nil {
		return err
	}
	err = e.store.DeleteSchedule(ctx, id)
	if errors.Is(err, driver.ErrNotFound) {
		return fmt.Errorf("%w: no schedule %s", rbtype.ErrNotFound, id)
	}
	return err
}
