package httpapi_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

func TestFollowSeesEveryEventLiveAndEnds(t *testing.T) {
	b := setup(t)
	sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.wait :as @docs)\n(t.echo :v @docs.answer :as @after)\n"})
	require.NoError(t, err)
	id := sub.ID.String()

	seen := make(chan apitype.Event, 100)
	final := make(chan string, 1)
	go func() {
		status, err := b.client.Follow(b.ctx, id, 0, func(ev apitype.Event) error {
			seen <- ev
			return nil
		})
		if err != nil {
			final <- "error: " + err.Error()
			return
		}
		final <- string(status)
	}()
	// The stream shows the park as it happens...
	var key string
	for key == "" {
		ev := <-seen
		if ev.Type == rbtype.EventStepParked {
			v, err := b.client.Get(b.ctx, id)
			require.NoError(t, err)
			key = v.Steps[0].CorrelationKey
		}
	}
	// ...and what the notification causes, then ends with the runbook.
	_, err = b.client.Notify(b.ctx, apitype.NotificationRequest{CorrelationKey: key, Status: "completed", Result: []byte(`{"answer":"yes"}`)})
	require.NoError(t, err)
	require.Equal(t, string(rbtype.RunbookComplete), <-final)
	close(seen)
	var streamed []rbtype.EventType
	for ev := range seen {
		streamed = append(streamed, ev.Type)
	}
	all, err := b.client.Events(b.ctx, id, 0)
	require.NoError(t, err)
	var types []rbtype.EventType
	for _, ev := range all {
		types = append(types, ev.Type)
	}
	require.Equal(t, types[len(types)-len(streamed):], streamed, "the stream delivers the ledger in order, without gaps")
	require.Equal(t, rbtype.EventRunbookCompleted, streamed[len(streamed)-1])

	// Reconnecting after the last event of a finished runbook: 204, which
	// tells an EventSource to stop.
	status, _ := b.raw(t, "GET", "/v1/runbooks/"+id+"/events", "",
		"Accept", "text/event-stream", "Last-Event-ID", strconv.FormatInt(all[len(all)-1].ID, 10))
	require.Equal(t, http.StatusNoContent, status)

	// A fresh stream of a finished runbook replays it and ends.
	status, out := b.raw(t, "GET", "/v1/runbooks/"+id+"/events", "", "Accept", "text/event-stream")
	require.Equal(t, http.StatusOK, status)
	sc := bufio.NewScanner(strings.NewReader(out))
	var names []rbtype.EventType
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			names = append(names, rbtype.EventType(name))
		}
	}
	require.Equal(t, append(types, "end"), names)
	require.Contains(t, out, "event: end\ndata: {\"status\":\"complete\"}\n\n")
}

// Each runbook's ledger is numbered from 1 (seq), whatever other runbooks
// wrote meanwhile; the global id stays the cursor (docs/daemon.md).
func TestEventsAreNumberedPerRunbook(t *testing.T) {
	b := setup(t)
	var ids []string
	for _, who := range []string{"ada", "grace"} {
		sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.echo :v $who)\n", Inputs: map[string]any{"who": who}})
		require.NoError(t, err)
		b.waitFor(t, sub.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
		ids = append(ids, sub.ID.String())
	}
	for _, id := range ids {
		evs, err := b.client.Events(b.ctx, id, 0)
		require.NoError(t, err)
		require.NotEmpty(t, evs)
		for i, ev := range evs {
			require.Equal(t, int64(i+1), ev.Seq)
		}
		// A page after a cursor goes on counting.
		rest, err := b.client.Events(b.ctx, id, evs[0].ID)
		require.NoError(t, err)
		require.Equal(t, int64(2), rest[0].Seq)
	}
	first, err := b.client.Events(b.ctx, ids[1], 0)
	require.NoError(t, err)
	require.Greater(t, first[0].ID, int64(1), "the second runbook's ids go on from the first's")
}
