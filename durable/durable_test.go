package durable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testBundle is what most tests start from: a store on a schema of their
// own.
type testBundle struct {
	store *durable.Store
	ctx   context.Context
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &testBundle{store: pgtest.Store(t), ctx: ctx}
}

// newRunbook builds a runbook of n steps in a chain: s1 → s2 → ...
func newRunbook(n int) durable.NewRunbook {
	id := uuid.New()
	rb := durable.NewRunbook{
		ID: id, Plan: json.RawMessage(`{"schema_version":1}`), PlanHash: "sha256:test",
		Inputs: json.RawMessage(`{"who":"x"}`), Mode: "execute", RequestKey: "req-" + id.String(),
		WorkerID: "test",
	}
	for i := 1; i <= n; i++ {
		key := fmt.Sprintf("s%d", i)
		rb.Steps = append(rb.Steps, durable.NewStep{
			Key: key, Position: i, Verb: "t.step", Args: json.RawMessage(`{}`),
			Execution: json.RawMessage(`{"kind":"sync"}`), Gate: "none",
		})
		if i > 1 {
			rb.Edges = append(rb.Edges, durable.Edge{From: fmt.Sprintf("s%d", i-1), To: key, Kind: "data"})
		}
	}
	return rb
}

func (b *testBundle) create(t *testing.T, n durable.NewRunbook) *durable.Runbook {
	t.Helper()
	var rb *durable.Runbook
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		var created bool
		var err error
		rb, created, err = tx.CreateRunbook(b.ctx, n)
		require.True(t, created)
		return err
	}))
	return rb
}

func TestCreateRunbookDedupesOnRequestKey(t *testing.T) {
	b := setup(t)
	n := newRunbook(3)
	rb := b.create(t, n)
	require.Equal(t, "executing", rb.Status)
	require.NotNil(t, rb.WakeAt, "a new runbook is due at once")

	again := newRunbook(1)
	again.RequestKey = n.RequestKey
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		existing, created, err := tx.CreateRunbook(b.ctx, again)
		require.False(t, created)
		require.Equal(t, rb.ID, existing.ID)
		return err
	}))

	steps, err := b.store.Steps(b.ctx, rb.ID)
	require.NoError(t, err)
	require.Len(t, steps, 3)
	require.Equal(t, []string{"s1", "s2", "s3"}, []string{steps[0].Key, steps[1].Key, steps[2].Key})
	require.Equal(t, "pending", steps[0].Status)

	events, err := b.store.Events(b.ctx, rb.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, "RUNBOOK_SUBMITTED", events[0].Type)
}

func TestCreateRunbookCopiesLargePlans(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(500))
	steps, err := b.store.Steps(b.ctx, rb.ID)
	require.NoError(t, err)
	require.Len(t, steps, 500)
	require.Equal(t, "s500", steps[499].Key)
}

func TestReadyStepsAndUpdates(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(3))
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		require.NoError(t, tx.LockRunbooks(b.ctx, []uuid.UUID{rb.ID}))
		ready, err := tx.ReadySteps(b.ctx, []uuid.UUID{rb.ID})
		require.NoError(t, err)
		require.Len(t, ready, 1)
		require.Equal(t, "s1", ready[0].Key)

		s1 := ready[0]
		s1.Status = "complete"
		s1.Result = json.RawMessage(`{"value":1}`)
		c := durable.ChangeOf(s1)
		c.Completed = true
		require.NoError(t, tx.UpdateSteps(b.ctx, []durable.StepChange{c}))

		ready, err = tx.ReadySteps(b.ctx, []uuid.UUID{rb.ID})
		require.NoError(t, err)
		require.Len(t, ready, 1)
		require.Equal(t, "s2", ready[0].Key)
		return nil
	}))
	steps, err := b.store.Steps(b.ctx, rb.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"value":1}`, string(steps[0].Result))
	require.NotNil(t, steps[0].CompletionSeq)
	require.Nil(t, steps[1].CompletionSeq)
}

func TestRunbookLockIsExclusive(t *testing.T) {
	b := setup(t)
	id := uuid.New()
	held := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.store.InTx(b.ctx, func(tx *durable.Tx) error {
			if err := tx.LockRunbooks(b.ctx, []uuid.UUID{id}); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	tryLock := func() bool {
		var ok bool
		require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
			var err error
			ok, err = tx.TryLockRunbook(b.ctx, id)
			return err
		}))
		return ok
	}
	require.False(t, tryLock(), "a second session must not get the lock while the first holds it")
	close(release)
	require.NoError(t, <-done)
	require.True(t, tryLock(), "the lock is free once the holder's transaction ends")
}

func TestLeaseReclaimedExactlyOnce(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	steps, err := b.store.Steps(b.ctx, rb.ID)
	require.NoError(t, err)
	step := steps[0]

	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		got, err := tx.AcquireLeases(b.ctx, "worker-a", time.Now().Add(-time.Second),
			[]durable.LeaseRequest{{StepID: step.ID, RunbookID: rb.ID, Attempt: 1}})
		require.Equal(t, []int64{step.ID}, got)
		return err
	}))
	// An active lease, even an expired one, is not taken twice.
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		got, err := tx.AcquireLeases(b.ctx, "worker-b", time.Now().Add(time.Minute),
			[]durable.LeaseRequest{{StepID: step.ID, RunbookID: rb.ID, Attempt: 1}})
		require.Empty(t, got)
		return err
	}))

	// Two reclaimers race; exactly one gets the lease.
	const reclaimers = 8
	results := make(chan int, reclaimers)
	start := make(chan struct{})
	for range reclaimers {
		go func() {
			<-start
			n := 0
			err := b.store.InTx(b.ctx, func(tx *durable.Tx) error {
				leases, err := tx.ReclaimExpiredLeases(b.ctx, []uuid.UUID{rb.ID}, time.Now())
				n = len(leases)
				return err
			})
			if err != nil {
				n = -1
			}
			results <- n
		}()
	}
	close(start)
	total := 0
	for range reclaimers {
		n := <-results
		require.GreaterOrEqual(t, n, 0)
		total += n
	}
	require.Equal(t, 1, total)

	// Once reclaimed, the step can be leased again, and the old holder can
	// neither renew nor release it.
	renewed, err := b.store.RenewLeases(b.ctx, "worker-a", time.Now().Add(time.Minute), []int64{step.ID})
	require.NoError(t, err)
	require.Empty(t, renewed)
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		got, err := tx.AcquireLeases(b.ctx, "worker-b", time.Now().Add(time.Minute),
			[]durable.LeaseRequest{{StepID: step.ID, RunbookID: rb.ID, Attempt: 2}})
		require.Equal(t, []int64{step.ID}, got)
		return err
	}))
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		held, err := tx.ReleaseLeases(b.ctx, "worker-a", []int64{step.ID})
		require.Empty(t, held)
		return err
	}))
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		held, err := tx.ReleaseLeases(b.ctx, "worker-b", []int64{step.ID})
		require.Equal(t, map[int64]int{step.ID: 2}, held)
		return err
	}))
}

func TestClaimDueSkipsClaimed(t *testing.T) {
	b := setup(t)
	first := b.create(t, newRunbook(1))
	second := b.create(t, newRunbook(1))
	ids, err := b.store.ClaimDue(b.ctx, 10, time.Minute)
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{first.ID, second.ID}, ids)
	again, err := b.store.ClaimDue(b.ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, again, "claimed runbooks are not due until the claim runs out")
	next, err := b.store.NextWake(b.ctx)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Minute), *next, 10*time.Second)
}

// A claim commits without waiting for the disk, and that setting is its
// own transaction's: the connection goes back to the pool with
// synchronous_commit on, for the advances and notifications that need it.
func TestClaimDueLeavesSynchronousCommitOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := durable.Open(ctx, durable.Config{URL: pgtest.ServerURL(t), Schema: pgtest.Schema(t), MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	_, err = store.Migrate(ctx)
	require.NoError(t, err)
	b := &testBundle{store: store, ctx: ctx}
	rb := b.create(t, newRunbook(1))
	// The test server runs with synchronous_commit off; this session, the
	// pool's only one, runs as a deployment would.
	require.NoError(t, store.InTx(ctx, func(tx *durable.Tx) error {
		return tx.ExecForTest(ctx, "SET synchronous_commit TO on")
	}))

	ids, err := store.ClaimDue(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{rb.ID}, ids)
	got, err := store.SettingForTest(ctx, "synchronous_commit")
	require.NoError(t, err)
	require.Equal(t, "on", got, "the one connection the claim used")
}

func TestReceiptsAndMutations(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	key := durable.ReceiptKey{Handler: "http.call", IdempotencyKey: "k1"}
	require.NoError(t, b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		require.NoError(t, tx.WriteReceipts(b.ctx, []durable.Receipt{{Handler: key.Handler, IdempotencyKey: key.IdempotencyKey,
			RunbookID: rb.ID, StepKey: "s1", Result: json.RawMessage(`{"a":1}`), ResultHash: "h1"}}))
		// A second write for the same key keeps the first.
		require.NoError(t, tx.WriteReceipts(b.ctx, []durable.Receipt{{Handler: key.Handler, IdempotencyKey: key.IdempotencyKey,
			RunbookID: rb.ID, StepKey: "s1", Result: json.RawMessage(`{"a":2}`), ResultHash: "h2"}}))
		got, err := tx.Receipts(b.ctx, []durable.ReceiptKey{key, {Handler: "http.call", IdempotencyKey: "other"}})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "h1", got[key].ResultHash)
		return tx.AppendMutation(b.ctx, durable.Mutation{RunbookID: rb.ID, Actor: "agent", Kind: "extend", Payload: json.RawMessage(`{"steps":["x"]}`)})
	}))
	ms, err := b.store.Mutations(b.ctx, rb.ID)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Equal(t, "agent", ms[0].Actor)
}

func TestListRunbooksPages(t *testing.T) {
	b := setup(t)
	var ids []uuid.UUID
	for range 5 {
		ids = append(ids, b.create(t, newRunbook(1)).ID)
	}
	var seen []uuid.UUID
	cursor := ""
	for {
		page, err := b.store.ListRunbooks(b.ctx, "executing", 2, cursor)
		require.NoError(t, err)
		for _, r := range page.Runbooks {
			seen = append(seen, r.ID)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	require.Len(t, seen, 5)
	require.ElementsMatch(t, ids, seen)
	require.Equal(t, ids[4], seen[0], "newest first")

	none, err := b.store.ListRunbooks(b.ctx, "complete", 10, "")
	require.NoError(t, err)
	require.Empty(t, none.Runbooks)
	_, err = b.store.ListRunbooks(b.ctx, "", 10, "garbage")
	require.ErrorIs(t, err, durable.ErrBadRequest)
	require.ErrorContains(t, err, `"garbage" is not a page cursor`)
}

func TestErrorsAreTranslated(t *testing.T) {
	b := setup(t)
	_, err := b.store.Runbook(b.ctx, uuid.New())
	require.ErrorIs(t, err, durable.ErrNotFound)
	rb := b.create(t, newRunbook(1))
	err = b.store.InTx(b.ctx, func(tx *durable.Tx) error {
		return tx.AddSteps(b.ctx, rb.ID, []durable.NewStep{{Key: "s1", Position: 9, Verb: "x", Args: json.RawMessage(`{}`), Execution: json.RawMessage(`{}`), Gate: "none"}})
	})
	require.ErrorIs(t, err, durable.ErrConflict)
}

func TestDatabaseStatsCountWork(t *testing.T) {
	b := setup(t)
	before, err := b.store.DatabaseStats(b.ctx)
	require.NoError(t, err)
	b.create(t, newRunbook(3))
	var diff durable.DatabaseStats
	require.Eventually(t, func() bool {
		after, err := b.store.DatabaseStats(b.ctx)
		require.NoError(t, err)
		diff = after.Sub(before)
		return diff.Commits >= 1 && diff.RowsInserted >= 4
	}, 10*time.Second, 100*time.Millisecond, "the runbook and its steps are counted once the server flushes its statistics")
	require.Positive(t, diff.WALBytes)
}
