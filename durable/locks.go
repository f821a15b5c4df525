package durable

import (
	"context"
	"hash/fnv"
	"slices"

	"github.com/google/uuid"
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
// the step it is for; see StoreNotification.
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
	_, err := t.tx.Exec(ctx, lockKeysSQL, keys)
	return translate(err)
}

// lockKeysSQL takes the advisory locks of an array of keys, strictly in
// the array's order, in one statement: unnest yields its rows in order,
// and each is locked as it is projected. Batched one statement a lock,
// the same locks cost a statement each in the database, and a resume
// takes two or three.
const lockKeysSQL = "SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS u(k)"

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
