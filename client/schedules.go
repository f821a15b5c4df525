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

func schedulePath(id string) string { return "/v1/schedules/" + url.PathEscape(id) }

// CreateSchedule makes a schedule. Bad input is an *Error whose Field
// names the field at fault.
func (c *Client) CreateSchedule(ctx context.Context, req apitype.ScheduleRequest) (*apitype.ScheduleView, error) {
	var out apitype.ScheduleView
	if _, err := c.callJSON(ctx, http.MethodPost, "/v1/schedules", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Schedules lists the caller's tenant's schedules.
func (c *Client) Schedules(ctx context.Context) (*apitype.ScheduleList, error) {
	var out apitype.ScheduleList
	if _, err := c.call(ctx, http.MethodGet, "/v1/schedules", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Schedule reads one schedule.
func (c *Client) Schedule(ctx context.Context, id string) (*apitype.ScheduleView, error) {
	var out apitype.ScheduleView
	if _, err := c.call(ctx, http.MethodGet, schedulePath(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchSchedule pauses, resumes or changes a schedule.
func (c *Client) PatchSchedule(ctx context.Context, id string, req apitype.SchedulePatchRequest) (*apitype.ScheduleView, error) {
	var out apitype.ScheduleView
	if _, err := c.callJSON(ctx, http.MethodPatch, schedulePath(id), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSchedule deletes a schedule; the runbooks it made stay.
func (c *Client) DeleteSchedule(ctx context.Context, id string) (*apitype.ScheduleDeleted, error) {
	var out apitype.ScheduleDeleted
	if _, err := c.call(ctx, http.MethodDelete, schedulePath(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
