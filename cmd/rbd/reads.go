package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/runtime"
)

// replicaWait is how long a read waits for the standby to replay the
// client's last write before it goes to the primary instead.
const replicaWait = time.Second

// replicaReads serves the views from a standby (--read-database-url):
// a read goes there when the standby answers and has replayed the
// client's last write, and to the primary otherwise (docs/scaling.md,
// "Reads from a standby").
type replicaReads struct {
	primary, replica *durable.Store
	log              *slog.Logger
	healthy          atomic.Bool
}

// Position implements httpapi.Reads.
func (r *replicaReads) Position(ctx context.Context) (string, error) {
	return r.primary.WALPosition(ctx)
}

// ForRead implements httpapi.Reads.
func (r *replicaReads) ForRead(ctx context.Context, after string) context.Context {
	if !r.healthy.Load() {
		return ctx
	}
	if after == "" {
		return runtime.WithReplica(ctx)
	}
	if ok, err := r.replica.WaitReplayed(ctx, after, replicaWait); err != nil || !ok {
		return ctx
	}
	return runtime.WithReplica(ctx)
}

// watch asks the standby every second whether it answers, logging only
// when that changes: while it does not, reads go to the primary.
func (r *replicaReads) watch(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		checkCtx, cancel := context.WithTimeout(ctx, time.Second)
		err := r.replica.Ping(checkCtx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch was := r.healthy.Swap(err == nil); {
		case was && err != nil:
			r.log.Warn("the standby of --read-database-url does not answer: reads go to the primary until it does", "err", err)
		case !was && err == nil:
			r.log.Info("reading the views from the standby of --read-database-url")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
