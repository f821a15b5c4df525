package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/pgtest"
)

func TestMigrateAppliesOnceAndReapplyIsANoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := pgtest.Open(t, pgtest.Schema(t))

	before, err := store.MigrationStatus(ctx)
	require.NoError(t, err)
	require.Equal(t, int32(0), before.Current)
	require.Positive(t, before.Latest)

	status, err := store.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, status.Latest, status.Current)

	again, err := store.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, status, again)

	// The tables are there and usable.
	_, err = store.ListRunbooks(ctx, driver.RunbookQuery{Limit: 10})
	require.NoError(t, err)
}

func TestMigrateRacesSafely(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A schema that does not exist yet: every racer tries to create it too.
	schema := pgtest.Schema(t) + "_race"
	t.Cleanup(func() {
		s := pgtest.Open(t, "public")
		require.NoError(t, s.InTestTx(context.Background(), func(tx *durable.Tx) error { return tx.DropSchemaForTest(context.Background(), schema) }))
	})
	const racers = 6
	errs := make(chan error, racers)
	start := make(chan struct{})
	for range racers {
		store := pgtest.Open(t, schema)
		go func() {
			<-start
			_, err := store.Migrate(ctx)
			errs <- err
		}()
	}
	close(start)
	for range racers {
		require.NoError(t, <-errs)
	}
	status, err := pgtest.Open(t, schema).MigrationStatus(ctx)
	require.NoError(t, err)
	require.Equal(t, status.Latest, status.Current)
}

func TestMigrateRefusesNewerDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := pgtest.Store(t)
	require.NoError(t, store.InTestTx(ctx, func(tx *durable.Tx) error { return tx.SetSchemaVersionForTest(ctx, 999) }))
	_, err := store.Migrate(ctx)
	require.ErrorIs(t, err, driver.ErrSchemaTooNew)
	require.ErrorContains(t, err, "the database is at version 999")
}
