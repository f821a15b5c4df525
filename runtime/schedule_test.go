package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// Schedules (docs/design/semantics.md section 14). The tests move the
// engine's clock and fire the schedule sweep themselves (FireSchedules):
// none sleeps to a tick.

// fixedClock is a clock the test sets.
type fixedClock struct{ at atomic.Int64 }

func newFixedClock(t time.Time) *fixedClock {
	c := &fixedClock{}
	c.set(t)
	return c
}
func (c *fixedClock) now() time.Time          { return time.Unix(0, c.at.Load()).UTC() }
func (c *fixedClock) set(t time.Time)         { c.at.Store(t.UnixNano()) }
func (c *fixedClock) advance(d time.Duration) { c.at.Add(int64(d)) }

// scheduleBundle is a bundle whose engine runs on the clock given, with
// no sweep of its own: the test fires.
func scheduleBundle(t *testing.T, now func() time.Time) *testBundle {
	t.Helper()
	return setup(t, func(cfg *runtime.Config) {
		cfg.Clock, cfg.SweepInterval, cfg.ScheduleGrace = now, time.Hour, time.Minute
	})
}

// tickRunbook is the runbook a tick of a schedule of the default tenant
// makes: its id follows from the request key (and the daemon's derivation
// key).
func tickRunbook(t *testing.T, b *testBundle, scheduleID uuid.UUID, tick time.Time) uuid.UUID {
	t.Helper()
	id, err := runtime.RunbookIDForTest(b.ctx, b.engine, runtime.DefaultTenant, fmt.Sprintf("schedule:%s:%s", scheduleID, tick.UTC().Format(time.RFC3339)))
	require.NoError(t, err)
	return id
}

// firedTicks lists the ticks of a schedule's runbooks, from the
// SCHEDULE_FIRED each carries, oldest first.
func firedTicks(t *testing.T, b *testBundle, scheduleID uuid.UUID) []time.Time {
	t.Helper()
	page, err := b.store.ListRunbooks(b.ctx, driver.RunbookQuery{Limit: 1000})
	require.NoError(t, err)
	var ticks []time.Time
	for _, rb := range page.Runbooks {
		for _, e := range b.events(t, rb.ID) {
			if e.Type != rbtype.EventScheduleFired {
				continue
			}
			d := decodeData[runtime.ScheduleFiredData](t, e.Data)
			if d.ScheduleID == scheduleID {
				require.Equal(t, tickRunbook(t, b, scheduleID, d.Tick), rb.ID, "the tick's runbook is keyed by the tick")
				ticks = append(ticks, d.Tick)
			}
		}
	}
	slicesSortTimes(ticks)
	return ticks
}

func slicesSortTimes(ts []time.Time) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].Before(ts[j-1]); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

func (b *testBundle) schedule(t *testing.T, spec runtime.ScheduleSpec) *apitype.ScheduleView {
	t.Helper()
	if spec.Source == "" {
		spec.Source = `(t.echo :v 1)`
	}
	v, err := b.engine.CreateSchedule(b.ctx, spec)
	require.NoError(t, err)
	return v
}

// Done means: two daemons on one database create exactly one runbook per
// tick, over 100 ticks, both firing at every tick.
func TestTwoEnginesMakeOneRunbookPerTick(t *testing.T) {
	c := newFixedClock(time.Date(2026, 6, 1, 9, 0, 30, 0, time.UTC))
	b := scheduleBundle(t, c.now)
	other := runtime.New(b.store, b.handlers, runtime.Config{Catalogue: b.cat, Clock: c.now, WorkerID: "other"})
	s := b.schedule(t, runtime.ScheduleSpec{Name: "minutely", Cron: "* * * * *", Overlap: driver.OverlapAllow})
	require.Equal(t, time.Date(2026, 6, 1, 9, 1, 0, 0, time.UTC), *s.NextFireAt)

	var want []time.Time
	for tick := range 100 {
		c.advance(time.Minute)
		want = append(want, time.Date(2026, 6, 1, 9, 1+tick, 0, 0, time.UTC))
		var made atomic.Int64
		var wg sync.WaitGroup
		for _, e := range []*runtime.Engine{b.engine, other, b.engine, other} {
			wg.Go(func() {
				n, err := e.FireSchedules(b.ctx)
				require.NoError(t, err)
				made.Add(int64(n))
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, made.Load(), "tick %d", tick)
	}
	require.Equal(t, want, firedTicks(t, b, s.ID))
	v, err := b.engine.Schedule(b.ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, want[99].Add(time.Minute), *v.NextFireAt)
	require.Equal(t, tickRunbook(t, b, s.ID, want[99]), v.LastRunbook.ID)
}

// overlap: skip skips a tick while the previous runbook parks, and fires
// again once it has finished.
func TestOverlapSkipSkipsWhileThePreviousRunbookParks(t *testing.T) {
	c := newFixedClock(time.Now().UTC().Truncate(time.Minute).Add(30 * time.Second))
	b := scheduleBundle(t, c.now)
	b.run(t)
	s := b.schedule(t, runtime.ScheduleSpec{Name: "waits", Cron: "@hourly", Source: `(t.wait :as @w)`})
	require.Equal(t, driver.OverlapSkip, s.Overlap, "the default")

	c.set(*s.NextFireAt)
	first := *s.NextFireAt
	made, err := b.engine.FireSchedules(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, made)
	a := tickRunbook(t, b, s.ID, first)
	v := b.waitState(t, a, "parked")

	c.advance(time.Hour) // the next tick, while a parks
	made, err = b.engine.FireSchedules(b.ctx)
	require.NoError(t, err)
	require.Zero(t, made)
	sv, err := b.engine.Schedule(b.ctx, s.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, sv.Skipped)
	require.Equal(t, a, sv.LastRunbook.ID)
	require.Equal(t, rbtype.RunbookExecuting, sv.LastRunbook.Status)
	skipped := false
	for _, e := range b.events(t, a) {
		if e.Type == rbtype.EventScheduleSkipped {
			skipped = true
			require.Equal(t, first.Add(time.Hour), decodeData[runtime.ScheduleFiredData](t, e.Data).Tick)
		}
	}
	require.True(t, skipped, "SCHEDULE_SKIPPED on the runbook that made it skip")

	_, err = b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: step(v, "w").CorrelationKey, Status: rbtype.OutcomeCompleted,
		Result: json.RawMessage(`{"answer":"done"}`)})
	require.NoError(t, err)
	b.waitStatus(t, a, rbtype.RunbookComplete)
	c.advance(time.Hour)
	made, err = b.engine.FireSchedules(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, made, "fires again once the previous one finished")
	require.Equal(t, []time.Time{first, first.Add(2 * time.Hour)}, firedTicks(t, b, s.ID))
}

// After a three-hour downtime, catch_up: latest runs the latest missed
// tick once, and none runs nothing; both go on from the next tick.
func TestCatchUpAfterADowntime(t *testing.T) {
	start := time.Date(2026, 6, 1, 9, 10, 0, 0, time.UTC)
	for _, tt := range []struct {
		catchUp driver.CatchUp
		want    []time.Time
	}{
		{driver.CatchUpLatest, []time.Time{time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}},
		{driver.CatchUpNone, nil},
	} {
		t.Run(string(tt.catchUp), func(t *testing.T) {
			c := newFixedClock(start)
			b := scheduleBundle(t, c.now)
			s := b.schedule(t, runtime.ScheduleSpec{Name: "hourly", Cron: "0 * * * *", CatchUp: tt.catchUp, Overlap: driver.OverlapAllow})
			c.advance(3*time.Hour + 20*time.Minute) // 10:00, 11:00 and 12:00 missed
			made, err := b.engine.FireSchedules(b.ctx)
			require.NoError(t, err)
			require.Equal(t, len(tt.want), made)
			require.Equal(t, tt.want, firedTicks(t, b, s.ID))
			v, err := b.engine.Schedule(b.ctx, s.ID)
			require.NoError(t, err)
			require.Equal(t, time.Date(2026, 6, 1, 13, 0, 0, 0, time.UTC), *v.NextFireAt)

			// A tick on time fires under either.
			c.set(time.Date(2026, 6, 1, 13, 0, 10, 0, time.UTC))
			made, err = b.engine.FireSchedules(b.ctx)
			require.NoError(t, err)
			require.Equal(t, 1, made)
		})
	}
}

// A paused schedule fires nothing; resumed, it fires from its next tick,
// never the ticks it slept through, whatever its catch_up.
func TestAPausedScheduleFiresNothing(t *testing.T) {
	c := newFixedClock(time.Date(2026, 6, 1, 9, 10, 0, 0, time.UTC))
	b := scheduleBundle(t, c.now)
	s := b.schedule(t, runtime.ScheduleSpec{Name: "hourly", Cron: "@hourly", CatchUp: driver.CatchUpLatest})
	paused := true
	v, err := b.engine.UpdateSchedule(b.ctx, s.ID, runtime.SchedulePatch{Paused: &paused})
	require.NoError(t, err)
	require.True(t, v.Paused)
	require.Nil(t, v.NextFireAt)
	for range 5 {
		c.advance(time.Hour)
		made, err := b.engine.FireSchedules(b.ctx)
		require.NoError(t, err)
		require.Zero(t, made)
	}
	resume := false
	v, err = b.engine.UpdateSchedule(b.ctx, s.ID, runtime.SchedulePatch{Paused: &resume})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 6, 1, 15, 0, 0, 0, time.UTC), *v.NextFireAt)
	made, err := b.engine.FireSchedules(b.ctx)
	require.NoError(t, err)
	require.Zero(t, made, "the ticks it slept through are not caught up")
	c.advance(time.Hour)
	made, err = b.engine.FireSchedules(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, made)
	require.Equal(t, []time.Time{time.Date(2026, 6, 1, 15, 0, 0, 0, time.UTC)}, firedTicks(t, b, s.ID))
}

// Daylight saving in Europe/London, as github.com/robfig/cron/v3 handles
// it (docs/runtime.md, "Schedules"): a job at 01:30 does not fire on the
// day the clocks go forward (01:00 becomes 02:00, so there is no 01:30),
// and fires twice on the day they go back (01:30 BST, then 01:30 GMT).
func TestScheduleAcrossDaylightSavingInLondon(t *testing.T) {
	london, err := time.LoadLocation("Europe/London")
	require.NoError(t, err)
	for _, tt := range []struct {
		name  string
		from  time.Time
		hours int
		want  []time.Time // UTC
	}{
		{"spring forward", time.Date(2026, 3, 27, 12, 0, 0, 0, london), 4 * 24, []time.Time{
			time.Date(2026, 3, 28, 1, 30, 0, 0, time.UTC), // 01:30 GMT
			time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC), // 01:30 BST; none on the 29th
			time.Date(2026, 3, 31, 0, 30, 0, 0, time.UTC),
		}},
		{"fall back", time.Date(2026, 10, 23, 12, 0, 0, 0, london), 4 * 24, []time.Time{
			time.Date(2026, 10, 24, 0, 30, 0, 0, time.UTC), // 01:30 BST
			time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), // 01:30 BST
			time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC), // 01:30 GMT, an hour later: twice that day
			time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC),
			time.Date(2026, 10, 27, 1, 30, 0, 0, time.UTC),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newFixedClock(tt.from)
			b := scheduleBundle(t, c.now)
			s := b.schedule(t, runtime.ScheduleSpec{Name: "london", Cron: "30 1 * * *", Timezone: "Europe/London", Overlap: driver.OverlapAllow})
			for range tt.hours * 4 {
				c.advance(15 * time.Minute)
				_, err := b.engine.FireSchedules(b.ctx)
				require.NoError(t, err)
			}
			require.Equal(t, tt.want, firedTicks(t, b, s.ID))
		})
	}
}

// Bad input names its field; a source that does not compile carries the
// compiler's diagnostics; nothing is stored.
func TestScheduleBadInput(t *testing.T) {
	b := scheduleBundle(t, time.Now)
	for _, tt := range []struct {
		spec  runtime.ScheduleSpec
		field string
		is    error
		msg   string
	}{
		{runtime.ScheduleSpec{Name: "x", Cron: "61 * * * *"}, "cron", rbtype.ErrInvalid, `cron "61 * * * *" does not parse`},
		{runtime.ScheduleSpec{Name: "x", Cron: "* * * * * *"}, "cron", rbtype.ErrInvalid, "expected exactly 5 fields"},
		{runtime.ScheduleSpec{Name: "x", Cron: ""}, "cron", rbtype.ErrInvalid, "cron is required"},
		{runtime.ScheduleSpec{Name: "x", Cron: "CRON_TZ=Asia/Tokyo 0 9 * * *"}, "cron", rbtype.ErrInvalid, "give it in timezone"},
		{runtime.ScheduleSpec{Name: "x", Cron: "0 0 30 2 *"}, "cron", rbtype.ErrInvalid, "never fires"},
		{runtime.ScheduleSpec{Name: "x", Cron: "@daily", Timezone: "Mars/Olympus"}, "timezone", rbtype.ErrInvalid, "is not an IANA time zone"},
		{runtime.ScheduleSpec{Name: "x", Cron: "@daily", Timezone: "Local"}, "timezone", rbtype.ErrInvalid, "depends on the daemon's machine"},
		{runtime.ScheduleSpec{Name: "x", Cron: "@daily", CatchUp: "all"}, "catch_up", rbtype.ErrInvalid, `catch_up "all" must be none or latest`},
		{runtime.ScheduleSpec{Name: "x", Cron: "@daily", Overlap: "queue"}, "overlap", rbtype.ErrInvalid, "must be skip or allow"},
		{runtime.ScheduleSpec{Name: "", Cron: "@daily"}, "name", rbtype.ErrInvalid, "name"},
		{runtime.ScheduleSpec{Name: "x", Cron: "@daily", Source: `(t.echo :v $n)`}, "inputs", rbtype.ErrInvalid, "input $n is missing"},
	} {
		t.Run(tt.field+" "+tt.msg, func(t *testing.T) {
			if tt.spec.Source == "" {
				tt.spec.Source = `(t.echo :v 1)`
			}
			_, err := b.engine.CreateSchedule(b.ctx, tt.spec)
			require.ErrorIs(t, err, tt.is)
			var fe *runtime.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tt.field, fe.Field)
			require.ErrorContains(t, err, tt.msg)
		})
	}
	_, err := b.engine.CreateSchedule(b.ctx, runtime.ScheduleSpec{Name: "x", Cron: "@daily", Source: `(t.ecko :v 1)`})
	var ce *runtime.CompileError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "E010", string(ce.Diagnostics[0].Code), "unknown verb")
	var fe *runtime.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "source", fe.Field)
	list, err := b.engine.Schedules(b.ctx, "")
	require.NoError(t, err)
	require.Empty(t, list, "nothing was stored")

	// A name is its tenant's once; another tenant may use it, and never
	// sees the first tenant's.
	s := b.schedule(t, runtime.ScheduleSpec{Name: "nightly", Cron: "@daily"})
	_, err = b.engine.CreateSchedule(b.ctx, runtime.ScheduleSpec{Name: "nightly", Cron: "@daily", Source: `(t.echo :v 1)`})
	require.ErrorIs(t, err, rbtype.ErrConflict)
	acme := runtime.WithScope(context.Background(), runtime.Scope{Tenant: "acme", Actor: "ops"})
	_, err = b.engine.CreateSchedule(acme, runtime.ScheduleSpec{Name: "nightly", Cron: "@daily", Source: `(t.echo :v 1)`})
	require.NoError(t, err)
	_, err = b.engine.Schedule(acme, s.ID)
	require.ErrorIs(t, err, rbtype.ErrNotFound)
	require.ErrorIs(t, b.engine.DeleteSchedule(acme, s.ID), rbtype.ErrNotFound)
	mine, err := b.engine.Schedules(acme, "")
	require.NoError(t, err)
	require.Len(t, mine, 1)
	require.Equal(t, "ops", mine[0].Actor)
}

// A tick runs in its schedule's tenant, as the actor who made it; a
// source that stops compiling makes no runbook and says why.
func TestATickRunsInItsTenantAndRecordsWhyItMadeNothing(t *testing.T) {
	c := newFixedClock(time.Date(2026, 6, 1, 9, 10, 0, 0, time.UTC))
	b := scheduleBundle(t, c.now)
	acme := runtime.WithScope(context.Background(), runtime.Scope{Tenant: "acme", Actor: "ops"})
	s, err := b.engine.CreateSchedule(acme, runtime.ScheduleSpec{Name: "h", Cron: "@hourly", Source: `(t.echo :v 1)`})
	require.NoError(t, err)
	c.set(*s.NextFireAt)
	made, err := b.engine.FireSchedules(b.ctx)
	require.NoError(t, err)
	v, err := b.engine.Schedule(acme, s.ID)
	require.NoError(t, err)
	require.Equal(t, 1, made, v.LastError)
	rb, err := b.engine.Get(acme, v.LastRunbook.ID)
	require.NoError(t, err)
	_, err = b.engine.Get(runtime.WithScope(context.Background(), runtime.Scope{Tenant: "other"}), rb.ID)
	require.ErrorIs(t, err, rbtype.ErrNotFound, "the runbook is the schedule's tenant's")
	require.Contains(t, b.eventTypes(t, rb.ID), "SCHEDULE_FIRED")

	// The catalogue loses the verb: the next tick makes nothing, says why,
	// and the schedule goes on to the tick after.
	b.extendCatalogue(t, "") // same verbs; then a source naming one it lacks
	src := `(t.gone :v 1)`
	_, err = b.engine.UpdateSchedule(acme, s.ID, runtime.SchedulePatch{Source: &src})
	require.Error(t, err, "a change is checked as a creation is")
	require.NoError(t, b.store.UpdateSchedule(b.ctx, driver.Schedule{ID: s.ID, Name: "h", Cron: "@hourly", Timezone: "UTC", Source: src,
		Filename: "scheduled.rbk", Inputs: []byte(`{}`), Mode: rbtype.ModeExecute, Overlap: driver.OverlapAllow, CatchUp: driver.CatchUpNone,
		NextFireAt: c.now().Add(time.Hour)}))
	c.advance(time.Hour)
	made, err = b.engine.FireSchedules(b.ctx)
	require.NoError(t, err)
	require.Zero(t, made)
	v, err = b.engine.Schedule(acme, s.ID)
	require.NoError(t, err)
	require.Contains(t, v.LastError, "does not compile")
	require.Equal(t, c.now().Add(time.Hour), *v.NextFireAt)
}
