package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/runbookdev/runbook/apitype"
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
type ScheduleRequest = apitype.ScheduleRequest

// SchedulePatch is PATCH /v1/schedules/{id}: each field given replaces
// the schedule's; Paused pauses (true) or resumes (false) it.
type SchedulePatch = apitype.SchedulePatchRequest

// Schedule is a schedule as the API shows it.
type Schedule = apitype.ScheduleView

// LastRunbook is the runbook a schedule's last fired tick made.
type LastRunbook = apitype.LastRunbookView

// ScheduleList is GET /v1/schedules.
type ScheduleList = apitype.ScheduleList

// ScheduleDeleted is DELETE /v1/schedules/{id}.
type ScheduleDeleted = apitype.ScheduleDeleted

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
