// Package httpapi is rbd's HTTP API (docs/design/daemon.md): the JSON endpoints that
// submit, inspect, decide, cancel and extend runbooks, the signed webhook
// that external processes notify, the health and metrics endpoints, and a
// Client for all of them, which the rbd commands use.
//
// The Server is an http.Handler over an Engine. It holds no state of its
// own: every request is answered from the database, so any number of rbd
// processes may serve the same runbooks.
//
// Every error is JSON, {"error": {"code": "...", "message": "..."}}, with
// a status code that says what kind of error it is (see errors.go); a
// source that does not compile, or a plan that does not match the
// daemon's catalogue, is 422 with its diagnostics in the error.
package httpapi
