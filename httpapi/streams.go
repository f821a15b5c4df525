package httpapi

import (
	"net/http"
	"sync"

	"github.com/runbookdev/runbook/apitype"
)

// The default bounds on live event streams.
const (
	DefaultMaxStreams         = 256
	DefaultMaxStreamsPerToken = 16
)

// streamLimit bounds the live event streams open at once, for each token
// and in all. Each stream polls the database five times a second for as
// long as it lasts, and a read-only token once opened 3,000 of them: the
// pool was saturated, and other tenants' submissions took ten times as
// long.
type streamLimit struct {
	perToken, total int
	mu              sync.Mutex
	open            map[*Principal]int
	all             int
}

func newStreamLimit(perToken, total int) *streamLimit {
	return &streamLimit{perToken: perToken, total: total, open: map[*Principal]int{}}
}

// take counts a stream of the caller's, if both bounds allow it, and
// returns how to give it back; else the refusal.
func (l *streamLimit) take(s *Server, r *http.Request, caller *Principal) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open[caller] >= l.perToken:
		return nil, s.refuse(r, reasonStreamsToken, &apiError{status: http.StatusTooManyRequests, code: CodeLimitExceeded,
			message: "this token has as many live event streams open as --max-streams-per-token allows; close one, or read the events without following them",
			limit:   &apitype.LimitInfo{Name: "max-streams-per-token", Max: l.perToken, Got: l.open[caller] + 1}})
	case l.all >= l.total:
		return nil, s.refuse(r, reasonStreamsAll, &apiError{status: http.StatusTooManyRequests, code: CodeLimitExceeded,
			message: "the daemon has as many live event streams open as --max-streams allows; retry later",
			limit:   &apitype.LimitInfo{Name: "max-streams", Max: l.total, Got: l.all + 1}})
	}
	l.open[caller]++
	l.all++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.all--
			if l.open[caller]--; l.open[caller] <= 0 {
				delete(l.open, caller)
			}
		})
	}, nil
}
