package durable

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

const scheduleColumns = `id, tenant, name, cron, timezone, coalesce(source, ''), plan, filename, inputs, mode,
	overlap, catch_up, paused, actor, scope, next_fire_at, last_tick_at, last_runbook_id, coalesce(last_error, ''),
	skipped, created_at, updated_at`

func scanSchedule(row pgx.CollectableRow) (driver.Schedule, error) {
	var s driver.Schedule
	var plan, inputs, scope []byte
	var mode, overlap, catchUp string
	err := row.Scan(&s.ID, &s.Tenant, &s.Name, &s.Cron, &s.Timezone, &s.Source, &plan, &s.Filename, &inputs, &mode,
		&overlap, &catchUp, &s.Paused, &s.Actor, &scope, &s.NextFireAt, &s.LastTickAt, &s.LastRunbookID, &s.LastError,
		&s.Skipped, &s.CreatedAt, &s.UpdatedAt)
	s.Plan, s.Inputs, s.Scope = rawJSON(plan), rawJSON(inputs), rawJSON(scope)
	s.Mode, s.Overlap, s.CatchUp = rbtype.Mode(mode), driver.Overlap(overlap), driver.CatchUp(catchUp)
	return s, err
}

// orJSON is b, or def when b is empty.
func orJSON(b []byte, def string) string {
	if len(b) == 0 {
		return def
	}
	return string(b)
}

// CreateSchedule stores a schedule.
func (s *Store) CreateSchedule(ctx context.Context, sc driver.Schedule) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO schedules (id, tenant, name, cron, timezone, source, plan, filename, inputs, mode, overlap,
			catch_up, paused, actor, scope, next_fire_at)
		VALUES ($1, $2, $3, $4, $5, nullif($6, ''), $7::jsonb, $8, $9::jsonb, $10, $11, $12, $13, $14, $15::jsonb, $16)`,
		sc.ID, sc.Tenant, sc.Name, sc.Cron, sc.Timezone, sc.Source, nullableJSON(sc.Plan), sc.Filename,
		orJSON(sc.Inputs, "{}"), string(sc.Mode), string(sc.Overlap), string(sc.CatchUp), sc.Paused, sc.Actor,
		orJSON(sc.Scope, "{}"), sc.NextFireAt)
	return translate(err)
}

// Schedule reads one schedule.
func (s *Store) Schedule(ctx context.Context, id uuid.UUID) (*driver.Schedule, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE id = $1`, id)
	if err != nil {
		return nil, translate(err)
	}
	sc, err := pgx.CollectExactlyOneRow(rows, scanSchedule)
	if err != nil {
		return nil, translate(err)
	}
	return &sc, nil
}

// Schedules lists a tenant's schedules ("" for every tenant's), by name.
func (s *Store) Schedules(ctx context.Context, tenant string) ([]driver.Schedule, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+scheduleColumns+` FROM schedules
		WHERE $1 = '' OR tenant = $1 ORDER BY name, tenant`, tenant)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, scanSchedule)
	return out, translate(err)
}

// UpdateSchedule replaces a schedule's definition, who it acts for (its
// actor and scope), its pause and its next
// tick.
func (s *Store) UpdateSchedule(ctx context.Context, sc driver.Schedule) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE schedules SET name = $2, cron = $3, timezone = $4, source = nullif($5, ''), plan = $6::jsonb,
			filename = $7, inputs = $8::jsonb, mode = $9, overlap = $10, catch_up = $11, paused = $12,
			next_fire_at = $13, last_error = nullif($14, ''), actor = $15, scope = $16::jsonb, updated_at = now()
		WHERE id = $1`,
		sc.ID, sc.Name, sc.Cron, sc.Timezone, sc.Source, nullableJSON(sc.Plan), sc.Filename, orJSON(sc.Inputs, "{}"),
		string(sc.Mode), string(sc.Overlap), string(sc.CatchUp), sc.Paused, sc.NextFireAt, sc.LastError, sc.Actor,
		orJSON(sc.Scope, "{}"))
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return driver.ErrNotFound
	}
	return nil
}

// DeleteSchedule deletes a schedule; the runbooks it made stay.
func (s *Store) DeleteSchedule(ctx context.Context, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM schedules WHERE id = $1`, id)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return driver.ErrNotFound
	}
	return nil
}

// DueSchedules lists schedules whose next tick has come, earliest first.
func (s *Store) DueSchedules(ctx context.Context, now time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM schedules WHERE NOT paused AND next_fire_at <= $1
		ORDER BY next_fire_at LIMIT $2`, now, limit)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, translate(err)
}

// LockDueSchedule locks a schedule still due at now, skipping one another
// transaction holds: that daemon fires it.
func (t *Tx) LockDueSchedule(ctx context.Context, id uuid.UUID, now time.Time) (*driver.Schedule, error) {
	rows, err := t.tx.Query(ctx, `SELECT `+scheduleColumns+` FROM schedules
		WHERE id = $1 AND NOT paused AND next_fire_at <= $2 FOR UPDATE SKIP LOCKED`, id, now)
	if err != nil {
		return nil, translate(err)
	}
	sc, err := pgx.CollectExactlyOneRow(rows, scanSchedule)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(err)
	}
	return &sc, nil
}

// TickSchedule records what firing a schedule's ticks did.
func (t *Tx) TickSchedule(ctx context.Context, id uuid.UUID, tick driver.ScheduleTick) error {
	_, err := t.tx.Exec(ctx, `
		UPDATE schedules SET next_fire_at = $2, last_tick_at = coalesce($3, last_tick_at),
			last_runbook_id = coalesce($4, last_runbook_id), last_error = nullif($5, ''),
			skipped = skipped + $6, updated_at = now()
		WHERE id = $1`, id, tick.NextFireAt, tick.LastTickAt, tick.LastRunbookID, tick.LastError, tick.Skipped)
	return translate(err)
}
