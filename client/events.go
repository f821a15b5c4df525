package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// maxEventPage is the most events the daemon answers at once.
const maxEventPage = 10000

// EventsPage returns one page of a runbook's ledger: the events after the
// event id after, at most limit of them (0: the daemon's default, 1000).
// A full page means more may follow.
func (c *Client) EventsPage(ctx context.Context, id string, after int64, limit int) (*apitype.EventsResponse, error) {
	l := ""
	if limit > 0 {
		l = strconv.Itoa(limit)
	}
	var out apitype.EventsResponse
	path := withQuery(runbookPath(id, "events"), "after", strconv.FormatInt(after, 10), "limit", l)
	if _, err := c.call(ctx, http.MethodGet, path, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Events returns a runbook's whole ledger after an event id (0: from the
// start), reading page after page.
func (c *Client) Events(ctx context.Context, id string, after int64) ([]apitype.Event, error) {
	var all []apitype.Event
	for {
		page, err := c.EventsPage(ctx, id, after, maxEventPage)
		if err != nil {
			return all, err
		}
		all = append(all, page.Events...)
		if len(page.Events) < maxEventPage {
			return all, nil
		}
		after = page.Events[len(page.Events)-1].ID
	}
}

// Follow calls fn with each of a runbook's events after an event id, live
// (Server-Sent Events), until the runbook finishes (it returns its final
// status), fn returns an error, or ctx ends. A dropped stream, or a
// daemon answering 5xx, is resumed where it stopped, after a growing wait.
func (c *Client) Follow(ctx context.Context, id string, after int64, fn func(apitype.Event) error) (rbtype.RunbookStatus, error) {
	backoff := 100 * time.Millisecond
	for {
		status, done, err := c.followOnce(ctx, id, &after, fn)
		if done {
			return status, err
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		wait := backoff
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
			wait = apiErr.RetryAfter
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// followOnce reads one stream. done reports whether following is over:
// the stream ended with the runbook, or fn or the daemon refused.
func (c *Client) followOnce(ctx context.Context, id string, after *int64, fn func(apitype.Event) error) (status rbtype.RunbookStatus, done bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.BaseURL, "/")+runbookPath(id, "events"), nil)
	if err != nil {
		return "", true, err
	}
	c.setHeaders(req, http.Header{
		"Accept":        {"text/event-stream"},
		"Last-Event-Id": {strconv.FormatInt(*after, 10)},
	})
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNoContent:
		// Finished, and nothing after the last event seen.
		v, err := c.Get(ctx, id)
		if err != nil {
			return "", true, err
		}
		return v.Status, true, nil
	case resp.StatusCode >= 300:
		raw, _ := io.ReadAll(resp.Body)
		// A wrong id or token will not mend itself; a 5xx may.
		return "", resp.StatusCode < 500, DecodeError(&Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: raw})
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	var name string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if name == "end" {
				var end apitype.StreamEnd
				_ = json.Unmarshal(data, &end)
				return end.Status, true, nil
			}
			if len(data) > 0 {
				var ev apitype.Event
				if err := json.Unmarshal(data, &ev); err != nil {
					return "", true, fmt.Errorf("error decoding an event: %w", err)
				}
				if err := fn(ev); err != nil {
					return "", true, err
				}
				*after = ev.ID
			}
			name, data = "", nil
		case strings.HasPrefix(line, ":"):
			// a comment: the daemon's keep-alive
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, err
	}
	return "", false, io.ErrUnexpectedEOF
}
