package durable

import (
	"context"
	"hash/fnv"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// lockKey is the 64-bit FNV-1a hash that names an advisory lock.
func lockKey(b []byte) int64 {
	h := fnv.New64a()
	h.Write(b)
	return int64(h.Sum64())
}

// RunbookLockKey is the advisory lock key of a runbook: a 64-bit hash of
// its id.
func RunbookLockKey(id uuid.UUID) int64 { return lockKey(id[:]) }

// correlationLockKey serializes a notification's arrival with the park of
// the step it is for; see InsertNotification.
func correlationLockKey(key string) int64 { return lockKey([]byte("correlation:" + key)) }

// LockRunbooks takes the transaction-level advisory locks of the runbooks,
// in the order of their keys, so that two transactions locking
// overlapping sets cannot deadlock. The locks are held until the
// transaction ends.
func (t *Tx) LockRunbooks(ctx context.Context, ids []uuid.UUID) error {
	keys := make([]int64, len(ids))
	for i, id := range ids {
		keys[i] = RunbookLockKey(id)
	}
	return t.lockKeys(ctx, keys)
}

func (t *Tx) lockKeys(ctx context.Context, keys []int64) error {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	// A lock this transaction holds is held until it ends: taking it
	// again is a round trip for nothing (a notification's transaction
	// locks its runbook, then advances it in place).
	keys = slices.DeleteFunc(keys, func(k int64) bool { return t.held[k] })
	if len(keys) == 0 {
		return nil
	}
	defer t.markHeld(keys...)
	if len(keys) == 1 {
		_, err := t.tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", keys[0])
		return translate(err)
	}
	// One round trip, the locks taken strictly in order.
	var b pgx.Batch
	for _, k := range keys {
		b.Queue("SELECT pg_advisory_xact_lock($1)", k)
	}
	return translate(t.tx.SendBatch(ctx, &b).Close())
}

// markHeld remembers advisory locks this transaction has taken.
func (t *Tx) markHeld(keys ...int64) {
	if t.held == nil {
		t.held = map[int64]bool{}
	}
	for _, k := range keys {
		t.held[k] = true
	}
}

// TryLockRunbook takes a runbook's advisory lock if it is free, and
// reports whether it did.
func (t *Tx) TryLockRunbook(ctx context.Context, id uuid.UUID) (bool, error) {
	var ok bool
	err := t.tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", RunbookLockKey(id)).Scan(&ok)
	if ok && err == nil {
		t.markHeld(RunbookLockKey(id))
	}
	return ok, translate(err)
}
