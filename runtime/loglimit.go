package runtime

import (
	"sync"
	"time"
)

// lineLimit lets a log line that repeats through an outage be written once
// an interval, saying how many were held back since the last one. During
// a database outage every work item fails alike; one line a work item
// buried the line that says when the outage began and ended.
type lineLimit struct {
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	last time.Time
	held int
}

func newLineLimit(every time.Duration) *lineLimit {
	return &lineLimit{every: every, now: time.Now}
}

// allow says whether to write the line now and, if so, how many were held
// back since the last written one.
func (l *lineLimit) allow() (write bool, held int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.held++
		return false, 0
	}
	l.last, held, l.held = now, l.held, 0
	return true, held
}
