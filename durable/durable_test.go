package durable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
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
	return setupAlone(t)
}

// setupAlone is setup for a test that must not run beside the package's
// others (which run once the sequential tests are done): one whose VACUUM
// must be able to remove what it deleted, which another test's open
// transaction would keep.
func setupAlone(t *testing.T) *testBundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &testBundle{store: pgtest.Store(t), ctx: ctx}
}

// newRunbook builds a runbook of n steps in a chain: s1 → s2 → ...
func newRunbook(n int) driver.NewRunbook {
	id := uuid.New()
	rb := driver.NewRunbook{
		ID: id, Plan: json.RawMessage(`{"schema_version":1}`), PlanHash: "sha256:test",
		Inputs: json.RawMessage(`{"who":"x"}`), Mode: rbtype.ModeExecute, RequestKey: "req-" + id.String(),
		WorkerID: "test",
	}
	for i := 1; i <= n; i++ {
		key := fmt.Sprintf("s%d", i)
		rb.Steps = append(rb.Steps, driver.NewStep{
			Key: key, Position: i, Verb: "t.step", Args: json.RawMessage(`{}`),
			Execution: json.RawMessage(`{"kind":"sync"}`), Gate: rbtype.GateNone,
		})
		if i > 1 {
			rb.Edges = append(rb.Edges, driver.Edge{From: fmt.Sprintf("s%d", i-1), To: key, Kind: "data"})
		}
	}
	return rb
}

func (b *testBundle) create(t *testing.T, n driver.NewRunbook) *driver.Runbook {
	t.Helper()
	var rb *driver.Runbook
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
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
	require.Equal(t, rbtype.RunbookExecuting, rb.Status)
	require.NotNil(t, rb.WakeAt, "a new runbook is due at once")

	again := newRunbook(1)
	again.RequestKey = n.RequestKey
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		existing, created, err := tx.CreateRunbook(b.ctx, again)
		require.False(t, created)
		require.Equal(t, rb.ID, existing.ID)
		return err
	}))

	steps, err := b.store.Steps(b.ctx, rb.ID, driver.StepPage{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, steps, 3)
	require.Equal(t, []string{"s1", "s2", "s3"}, []string{steps[0].Key, steps[1].Key, steps[2].Key})
	require.Equal(t, rbtype.StepPending, steps[0].Status)

	events, err := b.store.Events(b.ctx, rb.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, rbtype.EventRunbookSubmitted, events[0].Type)
}

func TestCreateRunbookCopiesLargePlans(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(500))
	steps, err := b.store.Steps(b.ctx, rb.ID, driver.StepPage{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, steps, 500)
	require.Equal(t, "s500", steps[499].Key)
}

// An advance loads the live steps and writes their changes: a step written
// complete takes its place in the order of completions and is no longer
// live.
func TestAdvanceLoadsLiveStepsAndWritesChanges(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(3))
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		require.NoError(t, tx.LockRunbooks(b.ctx, []uuid.UUID{rb.ID}))
		st, err := tx.LoadForAdvance(b.ctx, []uuid.UUID{rb.ID}, driver.LoadOptions{})
		require.NoError(t, err)
		require.Len(t, st.Runbooks, 1)
		require.Len(t, st.Steps, 3)
		s1 := st.Steps[0]
		require.Equal(t, "s1", s1.Key)
		s1.Status = rbtype.StepComplete
		s1.Result = json.RawMessage(`{"value":1}`)
		c := s1.Change()
		c.Completed = true
		_, err = tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Steps: []driver.StepChange{c}})
		require.NoError(t, err)

		st, err = tx.LoadForAdvance(b.ctx, []uuid.UUID{rb.ID}, driver.LoadOptions{})
		require.NoError(t, err)
		require.Len(t, st.Steps, 2, "a completed step is no longer live")
		require.Equal(t, "s2", st.Steps[0].Key)
		return nil
	}))
	steps, err := b.store.Steps(b.ctx, rb.ID, driver.StepPage{Limit: 1000})
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
		done <- b.store.InTx(b.ctx, func(tx driver.Tx) error {
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
		require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
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

// advanceLease runs what an advance does about one step's lease: lock the
// runbook, load it, end the leases the runtime would (the worker's own for
// the attempts it releases, and the expired), and ask for the lease. It
// returns the step ids leased and the leases released.
func (b *testBundle) advanceLease(rb uuid.UUID, worker string, until time.Time, release []driver.LeaseRequest, want *driver.LeaseRequest) (leased []int64, released map[int64]int, err error) {
	err = b.store.InTx(b.ctx, func(tx driver.Tx) error {
		if err := tx.LockRunbooks(b.ctx, []uuid.UUID{rb}); err != nil {
			return err
		}
		st, err := tx.LoadForAdvance(b.ctx, []uuid.UUID{rb}, driver.LoadOptions{})
		if err != nil {
			return err
		}
		released = map[int64]int{}
		w := driver.AdvanceWrite{Worker: worker, LeaseUntil: until}
		for _, s := range st.Steps {
			l := s.Lease
			if l == nil {
				continue
			}
			for _, r := range release {
				if r.StepID == s.ID && l.WorkerID == worker && l.Attempt == r.Attempt {
					released[s.ID] = r.Attempt
				}
			}
			if _, ok := released[s.ID]; ok || l.ExpiresAt.Before(time.Now()) {
				w.EndLeases = append(w.EndLeases, s.ID)
			}
		}
		if want != nil {
			w.Leases = []driver.LeaseRequest{*want}
		}
		leased, err = tx.WriteAdvance(b.ctx, w)
		return err
	})
	return leased, released, err
}

// A lease is taken through the production path (LoadForAdvance and
// WriteAdvance): an active lease is never taken twice, an expired one is
// reclaimed exactly once however many workers race for it, and its old
// holder can neither renew nor release it afterwards.
func TestLeaseReclaimedExactlyOnce(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	steps, err := b.store.Steps(b.ctx, rb.ID, driver.StepPage{Limit: 1000})
	require.NoError(t, err)
	step := steps[0]
	attempt := func(n int) *driver.LeaseRequest {
		return &driver.LeaseRequest{StepID: step.ID, RunbookID: rb.ID, Attempt: n}
	}

	got, _, err := b.advanceLease(rb.ID, "worker-a", time.Now().Add(time.Minute), nil, attempt(1))
	require.NoError(t, err)
	require.Equal(t, []int64{step.ID}, got)
	got, _, err = b.advanceLease(rb.ID, "worker-b", time.Now().Add(time.Minute), nil, attempt(1))
	require.NoError(t, err)
	require.Empty(t, got, "an active, unexpired lease is not taken twice")

	// worker-a's lease expires (its worker died): push it into the past.
	_, released, err := b.advanceLease(rb.ID, "worker-a", time.Time{}, []driver.LeaseRequest{*attempt(1)}, nil)
	require.NoError(t, err)
	require.Equal(t, map[int64]int{step.ID: 1}, released)
	got, _, err = b.advanceLease(rb.ID, "worker-a", time.Now().Add(-time.Second), nil, attempt(1))
	require.NoError(t, err)
	require.Equal(t, []int64{step.ID}, got)

	// Workers race to reclaim it and run attempt 2; exactly one wins.
	const racers = 8
	results := make(chan int, racers)
	start := make(chan struct{})
	for i := range racers {
		go func() {
			<-start
			got, _, err := b.advanceLease(rb.ID, fmt.Sprintf("racer-%d", i), time.Now().Add(time.Minute), nil, attempt(2))
			if err != nil {
				results <- -1
				return
			}
			results <- len(got)
		}()
	}
	close(start)
	total := 0
	for range racers {
		n := <-results
		require.GreaterOrEqual(t, n, 0)
		total += n
	}
	require.Equal(t, 1, total)

	// The old holder can neither renew nor release it.
	renewed, err := b.store.RenewLeases(b.ctx, "worker-a", time.Now().Add(time.Minute), []int64{step.ID})
	require.NoError(t, err)
	require.Empty(t, renewed)
	_, released, err = b.advanceLease(rb.ID, "worker-a", time.Time{}, []driver.LeaseRequest{*attempt(1)}, nil)
	require.NoError(t, err)
	require.Empty(t, released)
	leases, err := b.store.WorkerLeases(b.ctx, "worker-a")
	require.NoError(t, err)
	require.Empty(t, leases)
}

// A worker that brings back the outcome of an old attempt releases only
// that attempt's lease: when it reclaimed the step itself and runs the
// next attempt, that lease stays, or the step would look abandoned and run
// a third time while the second still runs.
func TestStaleOutcomeKeepsTheNextAttemptsLease(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	steps, err := b.store.Steps(b.ctx, rb.ID, driver.StepPage{Limit: 1000})
	require.NoError(t, err)
	second := driver.LeaseRequest{StepID: steps[0].ID, RunbookID: rb.ID, Attempt: 2}
	got, _, err := b.advanceLease(rb.ID, "worker-a", time.Now().Add(time.Minute), nil, &second)
	require.NoError(t, err)
	require.Equal(t, []int64{steps[0].ID}, got)

	first := second
	first.Attempt = 1
	_, released, err := b.advanceLease(rb.ID, "worker-a", time.Time{}, []driver.LeaseRequest{first}, nil)
	require.NoError(t, err)
	require.Empty(t, released, "attempt 1's lease is long gone")
	leases, err := b.store.WorkerLeases(b.ctx, "worker-a")
	require.NoError(t, err)
	require.Len(t, leases, 1, "attempt 2's lease stays")
	require.Equal(t, 2, leases[0].Attempt)

	_, released, err = b.advanceLease(rb.ID, "worker-a", time.Time{}, []driver.LeaseRequest{second}, nil)
	require.NoError(t, err)
	require.Equal(t, map[int64]int{steps[0].ID: 2}, released)
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
	require.NoError(t, store.InTestTx(ctx, func(tx *durable.Tx) error {
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
	key := driver.ReceiptKey{Handler: "http.call", IdempotencyKey: "k1"}
	receipt := func(result, hash string) driver.AdvanceWrite {
		return driver.AdvanceWrite{Receipts: []driver.Receipt{{Handler: key.Handler, IdempotencyKey: key.IdempotencyKey,
			RunbookID: rb.ID, StepKey: "s1", Result: json.RawMessage(result), ResultHash: hash}}}
	}
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		_, err := tx.WriteAdvance(b.ctx, receipt(`{"a":1}`, "h1"))
		require.NoError(t, err)
		// A second write for the same key keeps the first.
		_, err = tx.WriteAdvance(b.ctx, receipt(`{"a":2}`, "h2"))
		require.NoError(t, err)
		got, err := tx.Receipts(b.ctx, []driver.ReceiptKey{key, {Handler: "http.call", IdempotencyKey: "other"}})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "h1", got[key].ResultHash)
		_, err = tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Mutations: []driver.Mutation{
			{RunbookID: rb.ID, Actor: "agent", Kind: rbtype.MutationExtend, Payload: json.RawMessage(`{"steps":["x"]}`)},
		}})
		return err
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
		page, err := b.store.ListRunbooks(b.ctx, driver.RunbookQuery{Status: "executing", Limit: 2, After: cursor})
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

	none, err := b.store.ListRunbooks(b.ctx, driver.RunbookQuery{Status: "complete", Limit: 10})
	require.NoError(t, err)
	require.Empty(t, none.Runbooks)
	_, err = b.store.ListRunbooks(b.ctx, driver.RunbookQuery{Limit: 10, After: "garbage"})
	require.ErrorIs(t, err, driver.ErrBadRequest)
	require.ErrorContains(t, err, `"garbage" is not a page cursor`)
}

func TestErrorsAreTranslated(t *testing.T) {
	b := setup(t)
	_, err := b.store.Runbook(b.ctx, uuid.New())
	require.ErrorIs(t, err, driver.ErrNotFound)
	rb := b.create(t, newRunbook(1))
	err = b.store.InTx(b.ctx, func(tx driver.Tx) error {
		_, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{NewSteps: map[uuid.UUID][]driver.NewStep{rb.ID: {
			{Key: "s1", Position: 9, Verb: "x", Args: json.RawMessage(`{}`), Execution: json.RawMessage(`{}`), Gate: rbtype.GateNone},
		}}})
		return err
	})
	require.ErrorIs(t, err, driver.ErrConflict)
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

// Every step and runbook status, event type and mutation kind the
// runtime may write fits the tables' CHECK constraints: a value the schema does not
// know would make its transaction fail again and again.
func TestTheSchemaAdmitsEveryStatusAndEventType(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		events := make([]driver.Event, len(rbtype.EventTypes))
		for i, typ := range rbtype.EventTypes {
			events[i] = driver.Event{RunbookID: rb.ID, Type: typ}
		}
		if _, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Events: events}); err != nil {
			return err
		}
		for _, kind := range rbtype.MutationKinds {
			if _, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Mutations: []driver.Mutation{{RunbookID: rb.ID, Actor: "t", Kind: kind}}}); err != nil {
				return fmt.Errorf("mutation %s: %w", kind, err)
			}
		}
		st, err := tx.LoadForAdvance(b.ctx, []uuid.UUID{rb.ID}, driver.LoadOptions{AllSteps: true})
		if err != nil {
			return err
		}
		steps := st.Steps
		for _, st := range rbtype.StepStatuses {
			c := steps[0].Change()
			c.Status = st
			if _, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Steps: []driver.StepChange{c}}); err != nil {
				return fmt.Errorf("step status %s: %w", st, err)
			}
		}
		// One write a status: an UPDATE changes a row once, however many
		// of its inputs name it.
		for _, st := range rbtype.RunbookStatuses {
			if _, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Runbooks: []driver.RunbookChange{{ID: rb.ID, Status: &st}}}); err != nil {
				return fmt.Errorf("status %s: %w", st, err)
			}
		}
		return nil
	}))
	evs, err := b.store.Events(b.ctx, rb.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, len(rbtype.EventTypes)+1)
}

// The result cache: a write for a key that exists replaces it (two in one
// write keep the later), lookups return entries live or not, tenants are
// apart, and pruning deletes only what expired.
func TestResultCacheEntries(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(1))
	now := time.Now().UTC().Truncate(time.Microsecond)
	soon, past := now.Add(time.Hour), now.Add(-time.Minute)
	entry := func(tenant, key, result string, expires *time.Time) driver.CacheEntry {
		return driver.CacheEntry{Tenant: tenant, Key: key, Verb: "t.draft", DefinitionHash: "sha256:d", Result: json.RawMessage(result),
			RunbookID: rb.ID, StepKey: "s1", Attempt: 1, CreatedAt: now, ExpiresAt: expires}
	}
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		_, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Cache: []driver.CacheEntry{
			entry("", "forever", `{"v":1}`, nil),
			entry("", "expired", `{"v":2}`, &past),
			entry("", "live", `{"v":3}`, &soon),
			entry("", "live", `{"v":4}`, &soon), // the same key twice in one write: the later wins
			entry("acme", "live", `{"v":5}`, &soon),
		}})
		return err
	}))
	var got map[string]driver.CacheEntry
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		var err error
		got, err = tx.CacheEntries(b.ctx, "", []string{"forever", "expired", "live", "missing"})
		return err
	}))
	require.Len(t, got, 3)
	require.JSONEq(t, `{"v":4}`, string(got["live"].Result))
	require.Nil(t, got["forever"].ExpiresAt)
	require.True(t, got["forever"].Live(now.Add(1000*time.Hour)))
	require.False(t, got["expired"].Live(now))
	require.True(t, got["live"].Live(now))
	require.Equal(t, rb.ID, got["live"].RunbookID)

	pruned, err := b.store.PruneCache(b.ctx, now, 100)
	require.NoError(t, err)
	require.Equal(t, int64(1), pruned, "only the expired entry")
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		var err error
		got, err = tx.CacheEntries(b.ctx, "", []string{"forever", "expired", "live"})
		return err
	}))
	require.Len(t, got, 2)
	require.NotContains(t, got, "expired")
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		var err error
		got, err = tx.CacheEntries(b.ctx, "acme", []string{"live"})
		return err
	}))
	require.JSONEq(t, `{"v":5}`, string(got["live"].Result), "another tenant's entry is its own")
}
