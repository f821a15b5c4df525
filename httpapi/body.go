package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/runbookdev/runbook/apitype"
)

// DefaultMaxBody caps a request body (1 MiB): a runbook source, a plan or
// a notification is far smaller, and a cap keeps one client from filling
// the daemon's memory.
const DefaultMaxBody = 1 << 20

// DefaultBodyTimeout bounds the reading of one request body (30s): a
// notification or a source arrives in milliseconds, and a client that
// trickles its body holds memory and a connection for as long as it is
// let.
const DefaultBodyTimeout = 30 * time.Second

// DefaultMaxConcurrentBodies sizes each body pool (32): webhooks may hold
// up to this many times --max-body of memory, and token-checked requests
// as much again, however many connections send bodies and stall.
const DefaultMaxConcurrentBodies = 32

// DefaultBodiesPerAddress bounds the bodies read at once from one client
// address (8).
const DefaultBodiesPerAddress = 8

// DefaultBodyMinRate is the slowest a body may arrive, in bytes a second
// (1 KiB/s), measured over each chunk of it: a sender on any real link is
// far faster, and one that trickles a byte a second is cut off after four
// seconds (a chunk's 4 KiB at 1 KiB/s), not thirty. Measured per chunk, a
// client cannot send most of a body at once and then stall for the rest
// of --body-timeout while holding its room.
const DefaultBodyMinRate = 1 << 10

// takeBody reads a request's body into memory before its handler runs,
// and puts it back as r.Body for the handler's readBody. Every endpoint
// goes through it, so no route lets a client hold a connection open by
// sending slowly. A body is read
//
//   - only while its client's address reads fewer than --max-bodies-per-address
//     bodies at once;
//   - a chunk at a time, each chunk reserved from its pool (webhooks', or
//     token-checked requests'), and refused with 503 when the pool is full;
//   - at --body-min-rate bytes a second at least, each chunk within the
//     time that rate gives it, and within --body-timeout in all (else 408,
//     and the connection is closed).
//
// release gives the body's bytes back to the pool when the handler is
// done: they are alive until then.
func (s *Server) takeBody(w http.ResponseWriter, r *http.Request, pool *bodyPool, limit int64) (release func(), err error) {
	if r.Body == nil || r.Body == http.NoBody {
		// No deadline: a body-less request may be a live event stream,
		// and the connection's read deadline would also cut the server's
		// background read, which cancels the request's context.
		return func() {}, nil
	}
	if viaMCP(r) != nil {
		// A call of an /mcp tool, in process: its body is in memory
		// already, inside the /mcp request's own, which took its room.
		return func() {}, nil
	}
	if r.ContentLength > limit {
		s.leaveBody(w, r)
		return nil, s.refuse(r, reasonBodyTooLarge, errorf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			"the body is larger than the limit of %d bytes", limit))
	}
	doneReading, ok := s.addresses.take(r)
	if !ok {
		s.leaveBody(w, r)
		return nil, s.refuse(r, reasonAddressBusy, errorf(http.StatusServiceUnavailable, CodeUnavailable,
			"this address is sending as many request bodies at once as it may (%d); retry", s.addresses.limit))
	}
	defer doneReading()
	var reserved int64
	release = func() { pool.release(reserved) }
	ctl := http.NewResponseController(w)
	start := time.Now()
	in := http.MaxBytesReader(w, r.Body, limit)
	var body bytes.Buffer
	for {
		if !pool.reserve(bodyChunk) {
			release()
			s.leaveBody(w, r)
			return nil, s.refuse(r, reasonPoolFull(pool), errorf(http.StatusServiceUnavailable, CodeUnavailable,
				"the daemon holds as many %s request bodies as it may (%d bytes); retry", pool.name, pool.size))
		}
		reserved += bodyChunk
		deadline, paced := s.chunkDeadline(start, time.Now())
		_ = ctl.SetReadDeadline(deadline)
		_, err = io.CopyN(&body, in, bodyChunk)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			release()
			return nil, s.bodyReadError(w, r, err, paced, limit)
		}
	}
	// The whole body is in: lift the deadline, or the server's background
	// read of the connection would time out under a slow handler and
	// cancel its context.
	_ = ctl.SetReadDeadline(time.Time{})
	r.Body = io.NopCloser(bytes.NewReader(body.Bytes()))
	return release, nil
}

// chunkDeadline is when a chunk of a body that began arriving at start,
// the chunk at chunkStart, must have arrived by: a chunk's worth of
// --body-min-rate after chunkStart, and never later than --body-timeout
// after start. paced says the rate, not the timeout, set it.
func (s *Server) chunkDeadline(start, chunkStart time.Time) (deadline time.Time, paced bool) {
	limit := start.Add(s.cfg.BodyTimeout)
	if s.cfg.BodyMinRate <= 0 {
		return limit, false
	}
	due := chunkStart.Add(time.Duration(float64(bodyChunk) / float64(s.cfg.BodyMinRate) * float64(time.Second)))
	if due.Before(limit) {
		return due, true
	}
	return limit, false
}

// bodyReadError answers a body that could not be read.
func (s *Server) bodyReadError(w http.ResponseWriter, r *http.Request, err error, paced bool, limit int64) error {
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooLarge):
		return s.refuse(r, reasonBodyTooLarge, errorf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			"the body is larger than the limit of %d bytes", limit))
	case errors.As(err, &netErr) && netErr.Timeout():
		w.Header().Set("Connection", "close")
		if paced {
			return s.refuse(r, reasonBodyTooSlow, errorf(http.StatusRequestTimeout, CodeRequestTimeout,
				"the body arrived slower than %d bytes a second", s.cfg.BodyMinRate))
		}
		return s.refuse(r, reasonBodyTooSlow, errorf(http.StatusRequestTimeout, CodeRequestTimeout,
			"the body did not arrive within %v", s.cfg.BodyTimeout))
	}
	return errorf(http.StatusBadRequest, CodeMalformedJSON, "error reading the body: %v", err)
}

// leaveBody is for a request answered without reading its body: the
// server would otherwise read up to 256 KiB of it after the answer, for as
// long as the client cares to take. The connection is closed instead.
func (s *Server) leaveBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// readBody reads the whole body, refusing one over the cap with 413.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errorf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "the body is larger than the limit of %d bytes", limit)
	}
	if err != nil {
		return nil, errorf(http.StatusBadRequest, CodeMalformedJSON, "error reading the body: %v", err)
	}
	return body, nil
}

// decodeJSON decodes a body into v, strictly: unknown fields and trailing
// data are errors, so a misspelt field is reported instead of ignored.
// Numbers stay json.Number, as runbook inputs expect. An empty body is
// allowed when optional, and leaves v as it was.
func decodeJSON(body []byte, v any, optional bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "the body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "%s", describeJSONError(body, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "the body holds more than one JSON value")
	}
	return checkStorable(body)
}

// describeJSONError says where and what went wrong, in the body's terms.
func describeJSONError(body []byte, err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		line, col := position(body, syntax.Offset)
		return fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, err)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q must be %s, not a JSON %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return fmt.Sprintf("the body must be a JSON object, not a JSON %s", typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "invalid JSON: the body ends in the middle of a value"
	}
	return "invalid JSON: " + err.Error()
}

// jsonKind names a Go kind as a JSON reader would.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "true or false"
	case "float32", "float64":
		return "a number"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number"
	}
	return "a " + kind
}

// position turns a byte offset into a 1-based line and column.
func position(b []byte, offset int64) (line, col int) {
	if offset > int64(len(b)) {
		offset = int64(len(b))
	}
	before := b[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"INTERNAL","message":"the response did not encode"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError answers with an error body.
func writeError(w http.ResponseWriter, e *apiError) {
	switch e.status {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "5")
	}
	writeJSON(w, e.status, apitype.ErrorBody{Error: apitype.ErrorInfo{Code: apitype.ErrorCode(e.code), Message: e.message, Field: e.field, Diagnostics: e.diagnostics,
		DiagnosticsTotal: e.diagnosticsTotal, Limit: e.limit}})
}
