package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ReadAfterHeader carries a position in the primary's write-ahead log:
// the answer to a write has it (the write is at or before it), and a
// client that echoes it on a read is served only from a standby that has
// replayed that far, or from the primary (docs/scaling.md, "Reads from a
// standby").
const ReadAfterHeader = "Rbd-Read-After"

// readYourWritesWindow is how long after a token's last write its reads
// wait for the standby to have it without the client echoing the header.
const readYourWritesWindow = 10 * time.Second

// Reads lets the views be served from a standby (rbd serve
// --read-database-url) without a client ever reading older than its own
// last write.
type Reads interface {
	// Position is where the primary's write-ahead log ends now, at or
	// past every write committed before the call.
	Position(ctx context.Context) (string, error)
	// ForRead returns the context to serve a read with: marked for the
	// standby (runtime.WithReplica) when it answers and has replayed
	// after ("" for anything), unmarked (the primary) otherwise. It may
	// wait a little for the standby to catch up.
	ForRead(ctx context.Context, after string) context.Context
}

// lastWrites remembers each token's last write for readYourWritesWindow,
// so that a client that does not echo ReadAfterHeader still reads its
// own writes from this daemon.
type lastWrites struct {
	mu sync.Mutex
	by map[*Principal]lastWrite
}

type lastWrite struct {
	pos string
	at  time.Time
}

func (l *lastWrites) wrote(p *Principal, pos string, now time.Time) {
	if p == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[*Principal]lastWrite{}
	}
	if old, ok := l.by[p]; !ok || walAfter(pos, old.pos) || now.Sub(old.at) > readYourWritesWindow {
		l.by[p] = lastWrite{pos: pos, at: now}
	}
	// Tokens are a fixed set: the map is as large as it, at most.
}

func (l *lastWrites) of(p *Principal, now time.Time) string {
	if p == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.by[p]; ok && now.Sub(w.at) <= readYourWritesWindow {
		return w.pos
	}
	return ""
}

// parseWAL reads a position as PostgreSQL prints a pg_lsn (16/B374D848).
func parseWAL(pos string) (uint64, bool) {
	hi, lo, ok := strings.Cut(pos, "/")
	if !ok || len(hi) == 0 || len(hi) > 8 || len(lo) == 0 || len(lo) > 8 {
		return 0, false
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return h<<32 | l, true
}

// walAfter reports whether position a is past b ("" is before all).
func walAfter(a, b string) bool {
	x, okA := parseWAL(a)
	y, okB := parseWAL(b)
	return okA && (!okB || x > y)
}

// readContext is the context a read is served with, given the client's
// echoed position and the token's remembered last write: the later of
// the two must be on the standby for it to serve the read.
func (s *Server) readContext(r *http.Request, caller *Principal) (context.Context, error) {
	echoed := strings.TrimSpace(r.Header.Get(ReadAfterHeader))
	if echoed != "" {
		if _, ok := parseWAL(echoed); !ok {
			return nil, errorf(http.StatusBadRequest, CodeInvalidRequest,
				"%s must be a position as an earlier answer gave it (like 0/16B3748), got %q", ReadAfterHeader, echoed)
		}
	}
	after := echoed
	if mine := s.writes.of(caller, time.Now()); walAfter(mine, after) {
		after = mine
	}
	return s.cfg.Reads.ForRead(r.Context(), after), nil
}

// positionWriter adds ReadAfterHeader to a write's successful answer,
// asked of the primary when the answer's header is written (the write has
// committed by then), and remembers it for the token.
type positionWriter struct {
	http.ResponseWriter
	ctx     context.Context
	s       *Server
	caller  *Principal
	written bool
}

func (w *positionWriter) WriteHeader(status int) {
	if !w.written {
		w.written = true
		if status < 400 {
			if pos, err := w.s.cfg.Reads.Position(w.ctx); err == nil {
				w.Header().Set(ReadAfterHeader, pos)
				w.s.writes.wrote(w.caller, pos, time.Now())
			}
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *positionWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *positionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
