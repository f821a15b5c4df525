package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/runtime"
)

const (
	defaultEventLimit = 1000
	maxEventLimit     = 10000
)

// events is GET /v1/runbooks/{id}/events: the ledger as JSON, or, when
// the client accepts text/event-stream, followed live.
func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	id, err := runbookID(r)
	if err != nil {
		return err
	}
	after, err := queryInt(r, "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		if last := r.Header.Get("Last-Event-ID"); last != "" {
			// A reconnecting EventSource says where it stopped.
			n, err := strconv.ParseInt(last, 10, 64)
			if err != nil || n < 0 {
				return errorf(http.StatusBadRequest, CodeInvalidRequest, "Last-Event-ID %q is not an event id", last)
			}
			after = n
		}
		release, err := s.streams.take(s, r, principalOf(r))
		if err != nil {
			return err
		}
		defer release()
		leavePool(r)
		return s.stream(w, r, id, after)
	}
	limit, err := queryInt(r, "limit", defaultEventLimit, 1, maxEventLimit)
	if err != nil {
		return err
	}
	evs, tr, err := s.engine.TracedEvents(r.Context(), id, after, int(limit))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitype.EventsResponse{Events: toEvents(evs, tr)})
	return nil
}

// stream sends a runbook's events as Server-Sent Events (each event's id,
// its type as the event name, and its JSON as data) as they are written,
// until the runbook finishes; then an "end" event, and the stream closes.
// A client that reconnects with Last-Event-ID to a finished runbook that
// has nothing more gets 204, which tells an EventSource to stop.
//
// The stream polls the ledger (EventPoll): a NOTIFY per event would cost
// every advance transaction for the few runbooks anyone watches.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id uuid.UUID, after int64) error {
	ctx := r.Context()
	ctl := http.NewResponseController(w)
	started := false
	poll := time.NewTicker(s.cfg.EventPoll)
	defer poll.Stop()
	lastWrite := time.Now()
	for {
		// Read the status before the events: a runbook that finished in
		// between has all of its events in the read that follows.
		status, finished, err := s.engine.Status(ctx, id)
		if err != nil {
			if started {
				return nil // the stream has begun; the client sees it end
			}
			return err
		}
		evs, tr, err := s.engine.TracedEvents(ctx, id, after, maxEventLimit)
		if err != nil {
			if started {
				return nil
			}
			return err
		}
		if !started {
			if finished && len(evs) == 0 && r.Header.Get("Last-Event-ID") != "" {
				w.WriteHeader(http.StatusNoContent)
				return nil
			}
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Accel-Buffering", "no") // nginx would hold the stream back
			w.WriteHeader(http.StatusOK)
			started = true
		}
		for _, ev := range toEvents(evs, tr) {
			data, err := json.Marshal(ev)
			if err != nil {
				// The stream has started: an error status cannot be sent.
				// The event's data came from jsonb, so this is a bug; end
				// the stream and let the client resume after the last id.
				return nil
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, data); err != nil {
				return nil // the client went away
			}
			after = ev.ID
		}
		if len(evs) > 0 {
			lastWrite = time.Now()
		}
		if len(evs) == maxEventLimit {
			_ = ctl.Flush()
			continue // more are waiting
		}
		if finished {
			data, err := json.Marshal(apitype.StreamEnd{Status: status})
			if err != nil {
				return nil
			}
			_, _ = fmt.Fprintf(w, "event: end\ndata: %s\n\n", data)
			_ = ctl.Flush()
			return nil
		}
		if time.Since(lastWrite) >= s.cfg.Heartbeat {
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			lastWrite = time.Now()
		}
		if err := ctl.Flush(); err != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		case <-poll.C:
		}
	}
}

// toEvents makes the API's events of the ledger's, with the trace context
// each carries: the runbook's trace and correlation ids, and a step
// attempt's id and span.
func toEvents(evs []driver.Event, tr runtime.EventTrace) []apitype.Event {
	out := make([]apitype.Event, len(evs))
	for i, e := range evs {
		out[i] = apitype.Event{ID: e.ID, Seq: e.Seq, Type: e.Type, Step: e.StepKey, Attempt: e.Attempt, Worker: e.WorkerID, Data: e.Data, At: e.At,
			TraceID: tr.TraceID, CorrelationID: tr.CorrelationID}
		if string(e.Data) == "{}" || string(e.Data) == "null" {
			out[i].Data = nil
		}
		if e.StepKey != "" && e.Attempt > 0 {
			id, span := tr.Attempt(e.StepKey, e.Attempt)
			out[i].AttemptID, out[i].SpanID = &id, span
		}
	}
	return out
}

// queryInt reads an integer query parameter within bounds.
func queryInt(r *http.Request, name string, def, min, max int64) (int64, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < min || n > max {
		return 0, errorf(http.StatusBadRequest, CodeInvalidRequest, "%s %q must be a number from %d to %d", name, raw, min, max)
	}
	return n, nil
}
