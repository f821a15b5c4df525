package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/durable"
)

// park persists an active invocation for a runbook's first step.
func (b *testBundle) park(t *testing.T, rb *durable.Runbook, key string) durable.Invocation {
	t.Helper()
	steps, err := b.store.Steps(b.ctx, rb.ID)
	require.NoError(t, err)
	var inv durable.Invocation
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		require.NoError(t, tx.LockRunbooks(b.ctx, []uuid.UUID{rb.ID}))
		var created bool
		inv, created, err = tx.InsertInvocation(b.ctx, durable.Invocation{
			InvocationID: uuid.New(), StepID: steps[0].ID, RunbookID: rb.ID, Attempt: 1,
			CorrelationKey: key, TimeoutAt: time.Now().Add(time.Hour),
		})
		require.True(t, created)
		// Nothing is due until the notification comes.
		return tx.UpdateRunbook(b.ctx, durable.RunbookChange{ID: rb.ID, SetWake: true})
	}))
	return inv
}

func notification(key, result string) durable.Notification {
	return durable.Notification{CorrelationKey: key, PayloadHash: "hash-of-" + result, Outcome: "completed", Result: json.RawMessage(result)}
}

func TestInboxIsIdempotentAndDetectsConflicts(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	b.park(t, rb, "ck-1")

	res, err := b.store.InsertNotification(b.ctx, notification("ck-1", `{"ok":true}`))
	require.NoError(t, err)
	require.Equal(t, durable.InboxAccepted, res)

	// The runbook is due again.
	got, err := b.store.Runbook(b.ctx, rb.ID)
	require.NoError(t, err)
	require.NotNil(t, got.WakeAt)

	res, err = b.store.InsertNotification(b.ctx, notification("ck-1", `{"ok":true}`))
	require.NoError(t, err)
	require.Equal(t, durable.InboxDuplicate, res)

	res, err = b.store.InsertNotification(b.ctx, notification("ck-1", `{"ok":false}`))
	require.NoError(t, err)
	require.Equal(t, durable.InboxConflict, res)

	n, err := b.store.Notification(b.ctx, "ck-1")
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true}`, string(n.Result), "the conflicting payload changed nothing")
}

func TestInboxConcurrentCopiesStoreOne(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	b.park(t, rb, "ck-many")
	const copies = 20
	results := make(chan durable.InboxResult, copies)
	var wg sync.WaitGroup
	for range copies {
		wg.Go(func() {
			res, err := b.store.InsertNotification(b.ctx, notification("ck-many", `{"n":1}`))
			require.NoError(t, err)
			results <- res
		})
	}
	wg.Wait()
	close(results)
	count := map[durable.InboxResult]int{}
	for r := range results {
		count[r]++
	}
	require.Equal(t, map[durable.InboxResult]int{durable.InboxAccepted: 1, durable.InboxDuplicate: copies - 1}, count)
}

func TestNotificationBeforeParkWaitsInTheInbox(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	res, err := b.store.InsertNotification(b.ctx, notification("ck-early", `{"early":true}`))
	require.NoError(t, err)
	require.Equal(t, durable.InboxAccepted, res)

	inv := b.park(t, rb, "ck-early")
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		waiting, err := tx.ReceivedNotifications(b.ctx, []string{inv.CorrelationKey})
		require.NoError(t, err)
		require.Len(t, waiting, 1, "the park finds the notification that came first")
		return tx.MarkNotifications(b.ctx, []int64{waiting[0].ID}, "processed")
	}))
	n, err := b.store.Notification(b.ctx, "ck-early")
	require.NoError(t, err)
	require.Equal(t, "processed", n.Status)
}

func TestNotificationForFinishedInvocationIsIgnored(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	inv := b.park(t, rb, "ck-cancelled")
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		return tx.FinishInvocations(b.ctx, []uuid.UUID{inv.InvocationID}, "cancelled")
	}))
	res, err := b.store.InsertNotification(b.ctx, notification("ck-cancelled", `{}`))
	require.NoError(t, err)
	require.Equal(t, durable.InboxAccepted, res, "kept")
	n, err := b.store.Notification(b.ctx, "ck-cancelled")
	require.NoError(t, err)
	require.Equal(t, "ignored", n.Status, "and ignored")
	got, err := b.store.Runbook(b.ctx, rb.ID)
	require.NoError(t, err)
	require.Nil(t, got.WakeAt, "a cancelled wait is not woken")
}

func TestListenerHearsNotify(t *testing.T) {
	b := setup(t)
	heard := make(chan string, 10)
	connected := make(chan bool, 10)
	l := b.store.NewListener(durable.ListenConfig{
		OnNotify:  func(p string) { heard <- p },
		OnConnect: func(re bool) { connected <- re },
	})
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	require.False(t, <-connected)

	rb := b.create(t, newRunbook(1)) // creating wakes the workers
	select {
	case p := <-heard:
		require.Equal(t, rb.ID.String(), p)
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
	}
}

// TestListenerReconnectsAndSweepFindsWhatWasMissed cuts the listener's
// connection with pg_terminate_backend, delivers a notification while it is
// away, and checks that the listener reconnects, says so, and that the
// sweep it triggers wakes the runbook.
func TestListenerReconnectsAndSweepFindsWhatWasMissed(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	inv := b.park(t, rb, "ck-missed")

	connected := make(chan bool, 10)
	l := b.store.NewListener(durable.ListenConfig{
		OnConnect:  func(re bool) { connected <- re },
		MaxBackoff: 200 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	require.False(t, <-connected)

	pid := l.BackendPID()
	require.NotZero(t, pid)
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		return tx.ExecForTest(b.ctx, "SELECT pg_terminate_backend($1)", int32(pid))
	}))
	// Delivered while the listener is away; and, as if its NOTIFY and its
	// wake-up were both lost, the runbook is put back to sleep.
	_, err := b.store.InsertNotification(b.ctx, notification(inv.CorrelationKey, `{"late":true}`))
	require.NoError(t, err)
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		return tx.UpdateRunbook(b.ctx, durable.RunbookChange{ID: rb.ID, SetWake: true})
	}))

	select {
	case re := <-connected:
		require.True(t, re, "the second connection is a reconnection")
	case <-time.After(15 * time.Second):
		t.Fatal("the listener did not reconnect")
	}
	require.NotEqual(t, pid, l.BackendPID())

	swept, err := b.store.Sweep(b.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, int64(1), swept.Inbox)
	got, err := b.store.Runbook(b.ctx, rb.ID)
	require.NoError(t, err)
	require.NotNil(t, got.WakeAt, "the sweep woke the runbook the lost notification was for")
	ids, err := b.store.ClaimDue(b.ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{rb.ID}, ids)
}

// A notification for a parked step and an advance of its runbook that
// writes the park again (a repeat after a crash) take the same two locks:
// they must take them in the same order, runbook first, or each waits for
// the other until PostgreSQL kills one as a deadlock.
func TestNotificationAndAdvanceTakeLocksInOneOrder(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	inv := b.park(t, rb, "ck-race")

	locked, release := make(chan struct{}), make(chan struct{})
	advanced := make(chan error, 1)
	go func() {
		advanced <- b.store.InTx(b.ctx, func(tx *durable.Tx) error {
			if err := tx.LockRunbooks(b.ctx, []uuid.UUID{rb.ID}); err != nil {
				return err
			}
			close(locked)
			<-release
			_, created, err := tx.InsertInvocation(b.ctx, inv)
			if created {
				return errors.New("the repeated park created a second invocation")
			}
			return err
		})
	}()
	<-locked
	notified := make(chan error, 1)
	go func() {
		_, err := b.store.InsertNotification(b.ctx, notification("ck-race", `{"ok":true}`))
		notified <- err
	}()
	require.Eventually(t, func() bool {
		n, err := b.store.LockWaitersForTest(b.ctx, durable.RunbookLockKey(rb.ID))
		require.NoError(t, err)
		return n == 1
	}, 10*time.Second, 5*time.Millisecond, "the notification waits for the runbook's lock")
	close(release)
	require.NoError(t, <-advanced)
	require.NoError(t, <-notified)

	got, err := b.store.Runbook(b.ctx, rb.ID)
	require.NoError(t, err)
	require.NotNil(t, got.WakeAt, "the notification woke the runbook")
}
