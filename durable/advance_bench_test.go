package durable_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable/pgtest"
)

// BenchmarkLoadAndWriteAdvance is the store's half of an advance of 1 or
// 64 runbooks of a 10-step chain, all steps pending: load their state (10
// steps a runbook), then write two steps of each back unchanged, as an
// advance that records an outcome and starts the next step writes two.
// One runbook is a resume's or a quiet daemon's transaction, where
// PostgreSQL's planning of each statement weighs most; 64 is a busy
// advancer's. The database's
// half is in the figure too (a local socket), but what changes from one
// commit to the next is mostly the scanning and the encoding (docs/runtime.md:
// profile: LoadForAdvance was a quarter of rbd's CPU in the chain run).
func BenchmarkLoadAndWriteAdvance(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("runbooks=%d", n), func(b *testing.B) { benchmarkLoadAndWriteAdvance(b, n) })
	}
}

func benchmarkLoadAndWriteAdvance(b *testing.B, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	store := pgtest.Store(b)
	ids := make([]uuid.UUID, n)
	require.NoError(b, store.InTx(ctx, func(tx driver.Tx) error {
		for i := range ids {
			rb, _, err := tx.CreateRunbook(ctx, newRunbook(10))
			if err != nil {
				return err
			}
			ids[i] = rb.ID
		}
		return nil
	}))
	b.ReportAllocs()
	for b.Loop() {
		require.NoError(b, store.InTx(ctx, func(tx driver.Tx) error {
			st, err := tx.LoadForAdvance(ctx, ids, driver.LoadOptions{})
			if err != nil {
				return err
			}
			if err := tx.LockRunbooks(ctx, ids); err != nil {
				return err
			}
			w := driver.AdvanceWrite{Worker: "bench", LeaseUntil: time.Now().Add(time.Minute)}
			for _, s := range st.Steps[:2*len(ids)] {
				w.Steps = append(w.Steps, s.Change())
			}
			_, err = tx.WriteAdvance(ctx, w)
			return err
		}))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/runbook")
}
