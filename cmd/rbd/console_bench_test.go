package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
)

const benchVerbs = `
- name: step
  domain: b
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    properties:
      v: {type: string}
  output_schema:
    properties:
      v: {type: string}
`

// wideSource is a runbook of n steps in layers of ten: each step takes
// data from the one ten before it, and runs after (a sequence edge) the
// one eleven before, so the graph has both kinds of edge and crossings to
// lay out.
func wideSource(n int) string {
	var s strings.Builder
	for i := range n {
		switch {
		case i < 10:
			fmt.Fprintf(&s, "(b.step :v \"start\" :as @s%d)\n", i)
		case i%10 == 0:
			fmt.Fprintf(&s, "(b.step :v @s%d.v :as @s%d)\n", i-10, i)
		default:
			fmt.Fprintf(&s, "(b.step :v @s%d.v :after @s%d :as @s%d)\n", i-10, i-11, i)
		}
	}
	return s.String()
}

// BenchmarkConsoleRender1000Steps measures how long the console takes to
// show a 1,000-step runbook in headless Chromium: from the route's start,
// through fetching the view and the plan, laying out and drawing the
// graph, to the first frame painted with it (the page's data-render-ms).
// The daemon runs with --worker=false so the runbook holds still and each
// run draws the same page. make bench-console runs it; BENCHMARKS.md has
// the figure.
func BenchmarkConsoleRender1000Steps(b *testing.B) {
	br := newBrowser(b, 1280, 800)
	e := newDaemonEnv(b)
	verbs := e.file(b, "verbs/b.yaml", benchVerbs)
	d := e.start(b, "--verbs", verbs, "--worker=false")
	sub, err := d.client("").Submit(context.Background(), apitype.SubmitRequest{Source: wideSource(1000), Filename: "wide.rbk"})
	require.NoError(b, err)
	page := d.server + "/ui/#/runbooks/" + sub.ID.String()

	var total, fetch, build float64
	b.ResetTimer()
	for range b.N {
		if err := chromedp.Do(br.ctx,
			chromedp.Navigate("about:blank"),
			chromedp.Navigate(page),
			chromedp.WaitReady(chromedp.CSS("body[data-render-ms]"))); err != nil {
			b.Fatalf("render: %v\n%s", err, br.console())
		}
		total += msAttr(b, br, "data-render-ms")
		fetch += msAttr(b, br, "data-fetch-ms")
		build += msAttr(b, br, "data-build-ms")
	}
	b.StopTimer()
	require.Equal(b, 1000, eval[int](b, br, `document.querySelectorAll("#graph .node").length`))
	require.Empty(b, br.problems(), br.console())
	b.ReportMetric(total/float64(b.N), "ms/render")
	b.ReportMetric(fetch/float64(b.N), "ms/fetch")
	b.ReportMetric(build/float64(b.N), "ms/build")
	shot := br.shot(b, "runbook-1000")
	if *updateScreenshots {
		copyScreenshot(b, shot, "runbook-1000")
	}
}

// msAttr reads a figure the page wrote on its body.
func msAttr(b *testing.B, br *browser, name string) float64 {
	b.Helper()
	ms := eval[string](b, br, `document.body.getAttribute("`+name+`")`)
	v, err := strconv.ParseFloat(ms, 64)
	require.NoError(b, err, name)
	return v
}
