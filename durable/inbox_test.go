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
	steps, err := b.store.Steps(b.ctx, rb.ID, driver.StepPage{Limit: 1000})
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

// insert stores a notification as the runtime's arrival does with these
// operations, without resuming in place: the wait's look-up, the insert
// under the runbook's and the key's locks, then a wake-up for an active
// wait or the notification ignored for one that ended.
func (b *testBundle) insert(n driver.Notification) (rbtype.InboxResult, error) {
	result := rbtype.InboxAccepted
	err := b.store.InTx(b.ctx, func(tx driver.Tx) error {
		var lock uuid.UUID
		target, err := tx.WaitTarget(b.ctx, n.CorrelationKey)
		switch {
		case err == nil:
			lock = target.RunbookID
		case !errors.Is(err, driver.ErrNotFound):
			return err
		}
		st, err := tx.StoreNotification(b.ctx, n, driver.StoreOptions{Lock: lock})
		switch {
		case err != nil:
			return err
		case !st.Inserted && st.PayloadHash == n.PayloadHash:
			result = rbtype.InboxDuplicate
		case !st.Inserted:
			result = rbtype.InboxConflict
		case st.Parked && st.WaitStatus != rbtype.InvocationActive:
			return tx.IgnoreNotifications(b.ctx, []int64{st.ID})
		case st.Parked:
			return tx.Wake(b.ctx, []uuid.UUID{st.RunbookID})
		}
		return nil
	})
	return result, err
}

func notification(key, result string) driver.Notification {
	return driver.Notification{CorrelationKey: key, PayloadHash: "hash-of-" + result, Outcome: rbtype.OutcomeCompleted, Result: json.RawMessage(result)}
}

func TestInboxIsIdempotentAndDetectsConflicts(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	b.park(t, rb, "ck-1")

	res, err := b.insert(notification("ck-1", `{"ok":true}`))
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)

	// The runbook is due again.
	got, err := b.store.Runbook(b.ctx, rb.ID)
	require.NoError(t, err)
	require.NotNil(t, got.WakeAt)

	res, err = b.insert(notification("ck-1", `{"ok":true}`))
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxDuplicate, res)

	res, err = b.insert(notification("ck-1", `{"ok":false}`))
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
			res, err := b.insert(notification("ck-many", `{"n":1}`))
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
	res, err := b.insert(notification("ck-early", `{"early":true}`))
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)

	b.park(t, rb, "ck-early")
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		require.NoError(t, tx.LockRunbooks(b.ctx, []uuid.UUID{rb.ID}))
		st, err := tx.LoadForAdvance(b.ctx, []uuid.UUID{rb.ID}, driver.LoadOptions{})
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
	res, err := b.insert(notification("ck-cancelled", `{}`))
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res, "kept")
	n, err := b.store.Notification(b.ctx, "ck-cancelled")
	require.NoError(t, err)
	require.Equal(t, rbtype.NotificationIgnored, n.Status, "and ignored")
	got, err := b.store.Runbook(b.ctx, rb.ID)
	require.NoError(t, err)
	require.Nil(t, got.WakeAt, "a cancelled wait is not woken")
}

// wait waits up to ten seconds for a listener's next wake-up.
func wait(ctx context.Context, l driver.Listener) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return l.WaitForNotification(ctx)
}

func TestListenerHearsNotify(t *testing.T) {
	b := setup(t)
	l := b.store.NewListener()
	require.NoError(t, l.Connect(b.ctx))
	defer func() { require.NoError(t, l.Close(b.ctx)) }()
	require.Error(t, l.Connect(b.ctx), "connected already")

	b.create(t, newRunbook(1))
	require.NoError(t, b.store.Signal(b.ctx), "sent after the commit that made a runbook due")
	p, err := wait(b.ctx, l)
	require.NoError(t, err)
	require.Equal(t, "wake", p)
}

// TestListenerLosesItsConnectionAndSweepFindsWhatWasMissed cuts the
// listener's connection with pg_terminate_backend: waiting fails; closed,
// it connects again on a new connection; and the sweep finds what was
// delivered while it was away (the runtime's listen loop sweeps after
// every reconnection: TestNotificationsSurviveAListenerCut in runtime).
func TestListenerLosesItsConnectionAndSweepFindsWhatWasMissed(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	inv := b.park(t, rb, "ck-missed")

	l := b.store.NewListener()
	require.NoError(t, l.Connect(b.ctx))
	defer func() { require.NoError(t, l.Close(b.ctx)) }()
	pid := l.(*durable.Listener).BackendPID()
	require.NotZero(t, pid)
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		return tx.ExecForTest(b.ctx, "SELECT pg_terminate_backend($1)", int32(pid))
	}))
	for {
		// A wake-up sent before the cut may still be read; then the loss.
		if _, err := wait(b.ctx, l); err != nil {
			break
		}
	}
	// Delivered while the listener is away; and, as if its NOTIFY and its
	// wake-up were both lost, the runbook is put back to sleep.
	_, err := b.insert(notification(inv.CorrelationKey, `{"late":true}`))
	require.NoError(t, err)
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		_, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Runbooks: []driver.RunbookChange{{ID: rb.ID, SetWake: true}}})
		return err
	}))

	require.NoError(t, l.Close(b.ctx))
	require.Zero(t, l.(*durable.Listener).BackendPID())
	require.NoError(t, l.Connect(b.ctx))
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
		_, err := b.insert(notification("ck-race", `{"ok":true}`))
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

// A notification's insert can read the runbook's state in the same round
// trip, after the insert, under the runbook's lock: the resume in place
// then loads nothing, and what it gets is what a load would read. Its
// savepoint undoes what follows it, and nothing before.
func TestANotificationsInsertReadsItsRunbooksState(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(2))
	b.park(t, rb, "ck-pre")
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		target, err := tx.WaitTarget(b.ctx, "ck-pre")
		require.NoError(t, err)
		require.Equal(t, driver.WaitTarget{RunbookID: rb.ID, Tenant: rb.Tenant, PlanHash: rb.PlanHash, StepKey: "s1",
			Verb: "t.step", Status: rbtype.InvocationActive}, target)
		st, err := tx.StoreNotification(b.ctx, notification("ck-pre", `{"ok":true}`),
			driver.StoreOptions{Lock: rb.ID, Savepoint: true, Load: true})
		require.NoError(t, err)
		require.True(t, st.Inserted)
		require.True(t, st.Parked)
		require.Equal(t, rb.ID, st.RunbookID)
		require.Equal(t, rbtype.InvocationActive, st.WaitStatus)
		require.NotNil(t, st.State)
		require.Len(t, st.State.Steps, 2)
		require.Len(t, st.State.Notifications, 1, "read after the insert")
		require.Equal(t, "ck-pre", st.State.Notifications[0].CorrelationKey)
		loaded, err := tx.LoadForAdvance(b.ctx, []uuid.UUID{rb.ID}, driver.LoadOptions{})
		require.NoError(t, err)
		require.Equal(t, loaded, st.State)

		_, err = tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Processed: []int64{st.ID}})
		require.NoError(t, err)
		require.NoError(t, tx.RollbackToSavepoint(b.ctx))
		return nil
	}))
	n, err := b.store.Notification(b.ctx, "ck-pre")
	require.NoError(t, err)
	require.Equal(t, rbtype.NotificationReceived, n.Status, "the write after the savepoint was undone, the insert before it kept")
}
