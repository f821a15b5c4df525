package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// latencyResult is what an insert-to-work run measured: for each job, the
// time from its insert's commit (when Insert returned to the inserting
// goroutine) to its Work call, and the time from the call to Insert (the
// producer acting, as rbd's resume run times from the webhook's send) to
// the Work call, on one process's monotonic clock.
type latencyResult struct {
	Jobs                  int       `json:"jobs"`
	Rate                  int       `json:"rate"`
	FetchCooldownMS       float64   `json:"fetch_cooldown_ms"`
	FetchPollIntervalMS   float64   `json:"fetch_poll_interval_ms"`
	InsertToWorkMS        []float64 `json:"insert_to_work_ms"`
	InsertSentToWorkMS    []float64 `json:"insert_sent_to_work_ms"`
	InsertCommitMedianMS  float64   `json:"insert_commit_median_ms"`
	InsertCommitSlowestMS float64   `json:"insert_commit_slowest_ms"`
}

// settle is how long the started client is left before the first insert,
// so that its producer is fetching and listening: the run times steady
// state, not the client's start.
const settle = time.Second

// latency sets up an empty schema, starts a client and inserts o.jobs jobs
// one at a time, o.rate a second, each from its own goroutine so that a
// slow commit does not delay the next insert.
func latency(ctx context.Context, o options) (*latencyResult, error) {
	if err := setup(ctx, o, 0); err != nil {
		return nil, err
	}
	pool, err := openPool(ctx, o)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	w := &noopWorker{keepStarts: true, startedByID: make(map[int64]time.Time, o.jobs)}
	c, err := newClient(pool, o, w)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	defer c.Stop(context.WithoutCancel(ctx))
	time.Sleep(settle)

	type insert struct {
		id            int64
		began, commit time.Time
		err           error
	}
	inserts := make([]insert, o.jobs)
	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for i := range inserts {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		wg.Go(func() {
			began := time.Now()
			res, err := c.Insert(ctx, noopArgs{}, nil)
			inserts[i] = insert{began: began, commit: time.Now(), err: err}
			if err == nil {
				inserts[i].id = res.Job.ID
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(time.Minute)
	for w.worked.Load() < int64(o.jobs) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d jobs worked a minute after the last insert", w.worked.Load(), o.jobs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	out := &latencyResult{Jobs: o.jobs, Rate: o.rate, FetchCooldownMS: ms(o.fetchCooldown), FetchPollIntervalMS: ms(o.fetchPollInterval)}
	commits := make([]float64, 0, o.jobs)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, in := range inserts {
		if in.err != nil {
			return nil, in.err
		}
		started, ok := w.startedByID[in.id]
		if !ok {
			return nil, fmt.Errorf("job %d was inserted but not worked", in.id)
		}
		out.InsertToWorkMS = append(out.InsertToWorkMS, ms(started.Sub(in.commit)))
		out.InsertSentToWorkMS = append(out.InsertSentToWorkMS, ms(started.Sub(in.began)))
		commits = append(commits, ms(in.commit.Sub(in.began)))
	}
	out.InsertCommitMedianMS, out.InsertCommitSlowestMS = medianAndMax(commits)
	return out, nil
}

// medianAndMax of a non-empty sample, which it sorts.
func medianAndMax(v []float64) (float64, float64) {
	slices.Sort(v)
	return v[len(v)/2], v[len(v)-1]
}
