package driver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// Schedule is a row of schedules.
type Schedule struct {
	ID       uuid.UUID
	Tenant   string
	Name     string
	Cron     string
	Timezone string
	// Source or Plan is what each tick submits (one of them).
	Source   string
	Plan     json.RawMessage
	Filename string
	Inputs   json.RawMessage
	Mode     rbtype.Mode
	Overlap  Overlap
	CatchUp  CatchUp
	Paused   bool
	// Actor and Scope are who made it and the scope of their token, under
	// which each tick runs.
	Actor string
	Scope json.RawMessage
	// NextFireAt is the next tick to fire, in UTC.
	NextFireAt    time.Time
	LastTickAt    *time.Time
	LastRunbookID *uuid.UUID
	LastError     string
	Skipped       int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// ScheduleTick is what firing a schedule's due ticks changes on it.
type ScheduleTick struct {
	NextFireAt time.Time
	// LastTickAt and LastRunbookID are set when a tick was fired or
	// skipped; nil keeps them.
	LastTickAt    *time.Time
	LastRunbookID *uuid.UUID
	// LastError replaces the last error ("" clears it).
	LastError string
	// Skipped counts ticks skipped for overlap.
	Skipped int64
}

// ScheduleStore is what the runtime needs of schedules' rows outside a
// transaction.
type ScheduleStore interface {
	// CreateSchedule stores a schedule; ErrConflict when its tenant has
	// one of the same name.
	CreateSchedule(ctx context.Context, s Schedule) error
	// Schedule reads one; ErrNotFound when there is none.
	Schedule(ctx context.Context, id uuid.UUID) (*Schedule, error)
	// Schedules lists a tenant's ("" for every tenant's), by name.
	Schedules(ctx context.Context, tenant string) ([]Schedule, error)
	// UpdateSchedule replaces a schedule's definition and state, but not
	// what its ticks recorded; ErrNotFound when there is none,
	// ErrConflict for a name its tenant uses.
	UpdateSchedule(ctx context.Context, s Schedule) error
	// DeleteSchedule deletes one; ErrNotFound when there is none.
	DeleteSchedule(ctx context.Context, id uuid.UUID) error
	// DueSchedules lists up to limit schedules, not paused, whose next
	// tick is at or before now.
	DueSchedules(ctx context.Context, now time.Time, limit int) ([]uuid.UUID, error)
}

// ScheduleTx is what firing a schedule needs of a transaction.
type ScheduleTx interface {
	// LockDueSchedule locks a schedule's row if it is still due at now
	// and no other transaction holds it; nil when it is not (another
	// daemon fires it, or fired it).
	LockDueSchedule(ctx context.Context, id uuid.UUID, now time.Time) (*Schedule, error)
	// TickSchedule records what firing did.
	TickSchedule(ctx context.Context, id uuid.UUID, t ScheduleTick) error
}

// Overlap and CatchUp are rbtype's: the API's schedule view names them
// without the driver.
type (
	Overlap = rbtype.Overlap
	CatchUp = rbtype.CatchUp
)

// The overlaps and catch-ups.
const (
	OverlapSkip   = rbtype.OverlapSkip
	OverlapAllow  = rbtype.OverlapAllow
	CatchUpNone   = rbtype.CatchUpNone
	CatchUpLatest = rbtype.CatchUpLatest
)
