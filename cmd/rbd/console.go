package main

import (
	"net/http"

	"github.com/runbookdev/runbook/httpapi/console"
)

// consoleHandler is the web console rbd serve mounts at /ui/, or nil with
// --ui=false (an API-only daemon behind a proxy that serves no pages).
func consoleHandler(on bool) http.Handler {
	if !on {
		return nil
	}
	return console.Handler()
}
