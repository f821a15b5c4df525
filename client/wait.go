package client

import (
	"context"
	"time"

	"github.com/runbookdev/runbook/apitype"
)

// WaitPoll is how often Wait looks at a runbook.
const WaitPoll = 100 * time.Millisecond

// Wait returns a runbook's view once it has settled: finished, or waiting
// on a person (a gate), a notification, or the agent holding it open. It
// looks every WaitPoll until then, or until ctx ends.
//
// A notification is taken in and then resumes its step: just after
// Notify, the runbook may still be parked, and Wait would answer at once.
// Wait for what should follow with WaitUntil.
func (c *Client) Wait(ctx context.Context, id string) (*apitype.RunbookView, error) {
	return c.WaitFunc(ctx, id, nil)
}

// WaitUntil returns a runbook's view once cond holds of it (Finished, for
// instance), looking every WaitPoll, or an error when ctx ends first.
func (c *Client) WaitUntil(ctx context.Context, id string, cond func(*apitype.RunbookView) bool) (*apitype.RunbookView, error) {
	for {
		view, err := c.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if cond(view) {
			return view, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(WaitPoll):
		}
	}
}

// Finished is a condition for WaitUntil: the runbook has finished
// (complete, partial, failed, cancelled or escalated).
func Finished(r *apitype.RunbookView) bool { return r.FinishedAt != nil }

// WaitFunc is Wait that also hands fn the events written while it waits,
// in order, as they are read (fn may be nil).
func (c *Client) WaitFunc(ctx context.Context, id string, fn func([]apitype.Event)) (*apitype.RunbookView, error) {
	var after int64
	for {
		// The view first: the events written before it was read are then
		// all in the read that follows, so none is missed at the end.
		view, err := c.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if fn != nil {
			evs, err := c.Events(ctx, id, after)
			if err != nil {
				return nil, err
			}
			if len(evs) > 0 {
				after = evs[len(evs)-1].ID
				fn(evs)
			}
		}
		if view.Settled() {
			return view, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(WaitPoll):
		}
	}
}
