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

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/rbtype"
)

// park persists an active invocation for a runbook's first step.
func (b *testBundle) park(t *testing.T, rb *driver.Runbook, key string) driver.Invocation {
	t.Helper()
	steps, err := b.store.Steps(b.ctx, rb.ID)
	require.NoError(t, err)
	inv := driver.Invocation{
		InvocationID: uuid.New(), StepID: steps[0].ID, RunbookID: rb.ID, Attempt: 1,
		CorrelationKey: key, Status: rbtype.InvocationActive, TimeoutAt: time.Now().Add(time.Hour),
	}
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		require.NoError(t, tx.LockRunbooks(b.ctx, []uuid.UUID{rb.ID}))
		// As an advance parks: the invocation, and nothing due until the
		// notification comes.
		_, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{
			NewInvocations: []driver.Invocation{inv},
			Runbooks:       []driver.RunbookChange{{ID: rb.ID, SetWake: true}},
		})
		return err
	}))
	got, err := b.store.Invocation(b.ctx, key)
	require.NoError(t, err)
	require.Equal(t, inv.InvocationID, got.InvocationID)
	return got
}

func notification(key, result string) driver.Notification {
	return driver.Notification{CorrelationKey: key, PayloadHash: "hash-of-" + result, Outcome: rbtype.OutcomeCompleted, Result: json.RawMessage(result)}
}

func TestInboxIsIdempotentAndDetectsConflicts(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	b.park(t, rb, "ck-1")

	res, err := b.store.InsertNotification(b.ctx, notification("ck-1", `{"ok":true}`))
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)

	// The runbook is due again.
	got, err := b.store.Runbook(b.ctx, rb.ID)
	require.NoError(t, err)
	require.NotNil(t, got.WakeAt)

	res, err = b.store.InsertNotification(b.ctx, notification("ck-1", `{"ok":true}`))
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxDuplicate, res)

	res, err = b.store.InsertNotification(b.ctx, notification("ck-1", `{"ok":false}`))
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxConflict, res)

	n, err := b.store.Notification(b.ctx, "ck-1")
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true}`, string(n.Result), "the conflicting payload changed nothing")
}

func TestInboxConcurrentCopiesStoreOne(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	b.park(t, rb, "ck-many")
	const copies = 20
	results := make(chan rbtype.InboxResult, copies)
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
	count := map[rbtype.InboxResult]int{}
	for r := range results {
		count[r]++
	}
	require.Equal(t, map[rbtype.InboxResult]int{rbtype.InboxAccepted: 1, rbtype.InboxDuplicate: copies - 1}, count)
}

func TestNotificationBeforeParkWaitsInTheInbox(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	res, err := b.store.InsertNotification(b.ctx, notification("ck-early", `{"early":true}`))
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)

	b.park(t, rb, "ck-early")
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		require.NoError(t, tx.LockRunbooks(b.ctx, []uuid.UUID{rb.ID}))
		st, err := tx.LoadForAdvance(b.ctx, []uuid.UUID{rb.ID}, "w", nil, time.Now())
		require.NoError(t, err)
		require.Len(t, st.Notifications, 1, "the advance after the park finds the notification that came first")
		_, err = tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Processed: []int64{st.Notifications[0].ID}})
		return err
	}))
	n, err := b.store.Notification(b.ctx, "ck-early")
	require.NoError(t, err)
	require.Equal(t, rbtype.NotificationProcessed, n.Status)
}

func TestNotificationForFinishedInvocationIsIgnored(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	inv := b.park(t, rb, "ck-cancelled")
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		_, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{
			Finished: map[rbtype.InvocationStatus][]uuid.UUID{rbtype.InvocationCancelled: {inv.InvocationID}},
		})
		return err
	}))
	res, err := b.store.InsertNotification(b.ctx, notification("ck-cancelled", `{}`))
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res, "kept")
	n, err := b.store.Notification(b.ctx, "ck-cancelled")
	require.NoError(t, err)
	require.Equal(t, rbtype.NotificationIgnored, n.Status, "and ignored")
	got, err := b.store.Runbook(b.ctx, rb.ID)
	require.NoError(t, err)
	require.Nil(t, got.WakeAt, "a cancelled wait is not woken")
}

func TestListenerHearsNotify(t *testing.T) {
	b := setup(t)
	heard := make(chan string, 10)
	connected := make(chan bool, 10)
	l := b.store.NewListener(driver.ListenConfig{
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
	l := b.store.NewListener(driver.ListenConfig{
		OnConnect:  func(re bool) { connected <- re },
		MaxBackoff: 200 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	require.False(t, <-connected)

	pid := l.(*durable.Listener).BackendPID()
	require.NotZero(t, pid)
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		return tx.ExecForTest(b.ctx, "SELECT pg_terminate_backend($1)", int32(pid))
	}))
	// Delivered while the listener is away; and, as if its NOTIFY and its
	// wake-up were both lost, the runbook is put back to sleep.
	_, err := b.store.InsertNotification(b.ctx, notification(inv.CorrelationKey, `{"late":true}`))
	require.NoError(t, err)
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		_, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Runbooks: []driver.RunbookChange{{ID: rb.ID, SetWake: true}}})
		return err
	}))

	select {
	case re := <-connected:
		require.True(t, re, "the second connection is a reconnection")
	case <-time.After(15 * time.Second):
		t.Fatal("the listener did not reconnect")
	}
	require.NotEqual(t, pid, l.(*durable.Listener).BackendPID())

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
		advanced <- b.store.InTx(b.ctx, func(tx driver.Tx) error {
			if err := tx.LockRunbooks(b.ctx, []uuid.UUID{rb.ID}); err != nil {
				return err
			}
			close(locked)
			<-release
			// The advance writes the park again, as a repeat after a crash
			// does: WriteAdvance takes the correlation key's lock.
			_, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{NewInvocations: []driver.Invocation{inv}})
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
	invs, err := b.store.InvocationsOf(b.ctx, rb.ID)
	require.NoError(t, err)
	require.Len(t, invs, 1, "the repeated park created no second invocation")
}

// A notification's transaction reads the wait first, hands it to check,
// and reads the runbook's state pipelined with its insert: the resume in
// place then loads nothing, and what it gets is what a load would read.
func TestAResumeInPlaceFindsItsRunbookAlreadyRead(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(2))
	b.park(t, rb, "ck-pre")
	var checked driver.WaitTarget
	res, resumed, err := b.store.InsertNotificationResuming(b.ctx, notification("ck-pre", `{"ok":true}`),
		func(_ driver.Tx, target driver.WaitTarget) error {
			checked = target
			return nil
		},
		func(tx driver.Tx, id uuid.UUID) error {
			require.Equal(t, rb.ID, id)
			require.True(t, tx.(*durable.Tx).PreloadedFor(id), "read with the insert")
			now := time.Now()
			pre, err := tx.LoadForAdvance(b.ctx, []uuid.UUID{id}, "w", nil, now)
			require.NoError(t, err)
			require.False(t, tx.(*durable.Tx).PreloadedFor(id), "used once")
			loaded, err := tx.LoadForAdvance(b.ctx, []uuid.UUID{id}, "w", nil, now)
			require.NoError(t, err)
			require.Equal(t, loaded, pre)
			require.Len(t, pre.Steps, 2)
			require.Len(t, pre.Notifications, 1, "the load comes after the insert")
			require.Equal(t, "ck-pre", pre.Notifications[0].CorrelationKey)
			return nil
		})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)
	require.True(t, resumed)
	require.Equal(t, driver.WaitTarget{RunbookID: rb.ID, Tenant: rb.Tenant, PlanHash: rb.PlanHash, StepKey: "s1",
		Verb: "t.step", Status: rbtype.InvocationActive}, checked)
}

// A check that refuses the notification stores nothing: the sender can
// send a corrected one under the same key.
func TestANotificationRefusedByItsCheckStoresNothing(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	b.park(t, rb, "ck-refused")
	refused := errors.New("does not fit the output schema")
	_, resumed, err := b.store.InsertNotificationResuming(b.ctx, notification("ck-refused", `{"bad":true}`),
		func(driver.Tx, driver.WaitTarget) error { return refused },
		func(driver.Tx, uuid.UUID) error { t.Fatal("a refused notification resumes nothing"); return nil })
	require.ErrorIs(t, err, refused)
	require.False(t, resumed)
	_, err = b.store.Notification(b.ctx, "ck-refused")
	require.ErrorIs(t, err, driver.ErrNotFound)
	res, err := b.store.InsertNotification(b.ctx, notification("ck-refused", `{"good":true}`))
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res, "the corrected one is the first")
}
