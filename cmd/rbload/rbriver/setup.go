package main

import (
	"context"

	"github.com/riverqueue/river"
)

// insertBatch is how many jobs one InsertManyFast call (one transaction)
// inserts while setting up a burn-down.
const insertBatch = 5000

// setup creates the schema, migrates it and inserts n no-op jobs, ready
// for a burn-down. The client only inserts: it is never started.
func setup(ctx context.Context, o options, n int) error {
	pool, err := openPool(ctx, o)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool, o.schema); err != nil {
		return err
	}
	c, err := newClient(pool, o, &noopWorker{})
	if err != nil {
		return err
	}
	for done := 0; done < n; {
		batch := make([]river.InsertManyParams, min(insertBatch, n-done))
		for i := range batch {
			batch[i] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := c.InsertManyFast(ctx, batch); err != nil {
			return err
		}
		done += len(batch)
	}
	if n > 0 {
		logf("%s: %d no-op jobs inserted", o.schema, n)
	}
	return nil
}
