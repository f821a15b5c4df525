package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// memory samples every daemon's resident set size from /proc. The
// workers are restarted by faults, so growth is judged on the API daemon,
// which lives through the whole run: its RSS after the run has settled
// may not exceed twice what it was once warmed up, plus a margin for the
// heap's granularity. No daemon may ever exceed the ceiling.
type memory struct {
	mu      sync.Mutex
	warm    int64 // the API daemon's RSS at the end of the warm-up, bytes
	last    int64 // its latest sample
	samples int
}

// memorySlack is what the API daemon may grow beyond twice its warm size.
const memorySlack = 64 << 20

func (m *memory) sample(ctx context.Context, c *cluster, warmUp time.Duration) {
	began := time.Now()
	for ctx.Err() == nil {
		for _, d := range append([]*daemon{c.api}, c.workers...) {
			if !d.running() {
				continue
			}
			rss, err := d.rss()
			if err != nil || d != c.api {
				continue
			}
			m.mu.Lock()
			m.samples++
			m.last = rss
			if m.warm == 0 && time.Since(began) >= warmUp {
				m.warm = rss
			}
			m.mu.Unlock()
		}
		sleepCtx(ctx, time.Second)
	}
}

// violations judges the samples against the bounds.
func (m *memory) violations(c *cluster, ceiling int64) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, d := range append([]*daemon{c.api}, c.workers...) {
		if d.peak > ceiling {
			out = append(out, fmt.Sprintf("%s reached %s of RSS, over the ceiling of %s", d.name, mib(d.peak), mib(ceiling)))
		}
	}
	if m.warm > 0 && m.last > 2*m.warm+memorySlack {
		out = append(out, fmt.Sprintf("the API daemon grew from %s once warm to %s at the end", mib(m.warm), mib(m.last)))
	}
	if m.samples == 0 {
		out = append(out, "the API daemon's memory was never sampled")
	}
	return out
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
