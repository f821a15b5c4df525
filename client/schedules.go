package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// The overlaps and catch-ups of a schedule (docs/design/semantics.md
// section 14).
const (
	OverlapSkip   = "skip"   // a tick while the previous runbook is unfinished makes nothing
	OverlapAllow  = "allow"  // every tick makes a runbook
	CatchUpNone   = "none"   // ticks missed while no daemon ran are dropped
	CatchUpLatest = "latest" // the latest of them runs once
)

// ScheduleRequest is POST /v1/schedules: a cron expression in a time zone,
// and the source or plan each tick submits with its inputs.
type ScheduleRequest struct {
	Name string `json:"name"`
	// Cron has five fields or is a name such as @hourly; Timezone is an
	// IANA time zone (default UTC).
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone,omitempty"`
	Source   string          `json:"source,omitempty"`
	Plan     json.RawMessage `json:"plan,omitempty"`
	Filename string          `json:"filename,omitempty"`
	Inputs   map[string]any  `json:"inputs,omitempty"`
	Mode     rbtype.Mode     `json:"mode,omitempty"`
	Overlap  string          `json:"overlap,omitempty"`
	CatchUp  string          `json:"catch_up,omitempty"`
}

// SchedulePatch is PATCH /v1/schedules/{id}: each field given replaces
// the schedule's; Paused pauses (true) or resumes (false) it.
type SchedulePatch struct {
	Paused   *bool           `json:"paused,omitempty"`
	Name     *string         `json:"name,omitempty"`
	Cron     *string         `json:"cron,omitempty"`
	Timezone *string         `json:"timezone,omitempty"`
	Source   *string         `json:"source,omitempty"`
	Plan     json.RawMessage `json:"plan,omitempty"`
	Filename *string         `json:"filename,omitempty"`
	Inputs   map[string]any  `json:"inputs,omitempty"`
	Mode     *rbtype.Mode    `json:"mode,omitempty"`
	Overlap  *string         `json:"overlap,omitempty"`
	CatchUp  *string         `json:"catch_up,omitempty"`
}

// Schedule is a schedule as the API shows it.
type Schedule struct {
	ID       uuid.UUID       `json:"id"`
	Name     string          `json:"name"`
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone"`
	Filename string          `json:"filename"`
	Source   string          `json:"source,omitempty"`
	Plan     json.RawMessage `json:"plan,omitempty"`
	Inputs   json.RawMessage `json:"inputs"`
	Mode     rbtype.Mode     `json:"mode"`
	Overlap  string          `json:"overlap"`
	CatchUp  string          `json:"catch_up"`
	Paused   bool            `json:"paused"`
	Actor    string          `json:"actor,omitempty"`
	// NextFireAt is the next tick, in UTC; nil while paused.
	NextFireAt *time.Time `json:"next_fire_at,omitempty"`
	LastTickAt *time.Time `json:"last_tick_at,omitempty"`
	// LastRunbook is the runbook the last fired tick made.
	LastRunbook *LastRunbook `json:"last_runbook,omitempty"`
	// LastError says why the last tick made no runbook.
	LastError string    `json:"last_error,omitempty"`
	Skipped   int64     `json:"skipped"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// LastRunbook is the runbook a schedule's last fired tick made.
type LastRunbook struct {
	ID     uuid.UUID            `json:"id"`
	Status rbtype.RunbookStatus `json:"status,omitempty"`
}

// ScheduleList is GET /v1/schedules.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"`
}

// ScheduleDeleted is DELETE /v1/schedules/{id}.
type ScheduleDeleted struct {
	ID      uuid.UUID `json:"id"`
	Deleted bool      `json:"deleted"`
}

func schedulePath(id string) string { return "/v1/schedules/" + url.PathEscape(id) }

// CreateSchedule makes a schedule. Bad input is an *Error whose Field
// names the field at fault.
func (c *Client) CreateSchedule(ctx context.Context, req ScheduleRequest) (*Schedule, error) {
	var out Schedule
	if _, err := c.callJSON(ctx, http.MethodPost, "/v1/schedules", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Schedules lists the caller's tenant's schedules.
func (c *Client) Schedules(ctx context.Context) (*ScheduleList, error) {
	var out ScheduleList
	if _, err := c.call(ctx, http.MethodGet, "/v1/schedules", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Schedule reads one schedule.
func (c *Client) Schedule(ctx context.Context, id string) (*Schedule, error) {
	var out Schedule
	if _, err := c.call(ctx, http.MethodGet, schedulePath(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchSchedule pauses, resumes or changes a schedule.
func (c *Client) PatchSchedule(ctx context.Context, id string, req SchedulePatch) (*Schedule, error) {
	var out Schedule
	if _, err := c.callJSON(ctx, http.MethodPatch, schedulePath(id), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSchedule deletes a schedule; the runbooks it made stay.
func (c *Client) DeleteSchedule(ctx context.Context, id string) (*ScheduleDeleted, error) {
	var out ScheduleDeleted
	if _, err := c.call(ctx, http.MethodDelete, schedulePath(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
