package main

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
)

// TestConsoleSchedules shows the schedules page: each schedule with its
// next tick and the runbook its last tick made, and a button that pauses
// and resumes it. One schedule ticks every second (the daemon sweeps every
// 200 ms), so that a tick has made a runbook to show; the other is a
// nightly job in London whose next tick is shown.
func TestConsoleSchedules(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, 1280, 800)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	d := e.start(t, "--verbs", verbs, "--min-schedule-interval", "1s")
	cl := d.client("")
	ctx := context.Background()
	often, err := cl.CreateSchedule(ctx, apitype.ScheduleRequest{Name: "every second", Cron: "@every 1s",
		Source: `(t.echo :v "tick")`, Overlap: "allow", CatchUp: "latest"})
	require.NoError(t, err)
	nightly, err := cl.CreateSchedule(ctx, apitype.ScheduleRequest{Name: "nightly", Cron: "30 1 * * *", Timezone: "Europe/London",
		Source: `(t.echo :v "night")`})
	require.NoError(t, err)

	row := func(id string) string { return `document.querySelector('#schedules tr[data-schedule="` + id + `"]')` }
	b.do(t, "open the schedules", chromedp.Navigate(d.server+"/ui/#/schedules"), chromedp.WaitVisible(chromedp.ID("schedules")))
	require.Contains(t, eval[string](t, b, row(nightly.ID.String())+`.querySelector(".next").textContent`),
		nightly.NextFireAt.UTC().Format("2006-01-02 15:04:05")+" UTC")
	require.Contains(t, eval[string](t, b, row(nightly.ID.String())+`.querySelector(".last").textContent`), "none yet")

	// Once a tick of the other has made a runbook, its row links it.
	require.Eventually(t, func() bool {
		v, err := cl.Schedules(ctx)
		require.NoError(t, err)
		for _, s := range v.Schedules {
			if s.ID == often.ID && s.LastRunbook != nil {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond)
	// The table on screen is marked, so that the waits below see the page
	// drawn again: until then the old one stays on screen, and when the
	// first load was slow its row may already link a runbook, but a click
	// on a page whose route was left goes nowhere (its requests are
	// aborted with it), and the button would never turn.
	require.True(t, eval[bool](t, b, `(document.getElementById("schedules").dataset.stale = "1") === "1"`))
	b.do(t, "look again", chromedp.Navigate(d.server+"/ui/#/"), chromedp.WaitVisible(chromedp.ID("main")),
		chromedp.Navigate(d.server+"/ui/#/schedules"), chromedp.WaitVisible(chromedp.CSS(`#schedules:not([data-stale])`)))
	waitJS(t, b, `!!`+row(often.ID.String())+`?.querySelector(".last a")`)
	// The runbook a tick made says which schedule made it.
	b.do(t, "open the runbook a tick made", chromedp.Click(chromedp.CSS(`#schedules tr[data-schedule="`+often.ID.String()+`"] .last a`)),
		chromedp.WaitVisible(chromedp.CSS(`#summary a[data-scheduled-by]`)))
	require.Contains(t, eval[string](t, b, `document.querySelector("#summary a[data-scheduled-by]").textContent`), "schedule every second, its tick of ")
	b.do(t, "back to the schedules", chromedp.Navigate(d.server+"/ui/#/schedules"), chromedp.WaitVisible(chromedp.ID("schedules")))
	waitJS(t, b, `!!`+row(nightly.ID.String())+`?.querySelector("button")`)
	require.Nil(t, eval[any](t, b, `document.querySelector("#schedules[data-stale]")`), "the page drawn again")

	b.do(t, "pause the nightly job", chromedp.Click(chromedp.CSS(`#schedules tr[data-schedule="`+nightly.ID.String()+`"] button`)))
	waitJS(t, b, row(nightly.ID.String())+`?.querySelector("button").textContent === "Resume"`)
	got, err := cl.Schedules(ctx)
	require.NoError(t, err)
	for _, s := range got.Schedules {
		if s.ID == nightly.ID {
			require.True(t, s.Paused)
		}
	}
	b.do(t, "resume it", chromedp.Click(chromedp.CSS(`#schedules tr[data-schedule="`+nightly.ID.String()+`"] button`)))
	waitJS(t, b, row(nightly.ID.String())+`?.querySelector("button").textContent === "Pause"`)
	require.Empty(t, b.problems(), "the page's console:\n%s", b.console())
}
