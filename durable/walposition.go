package durable

import (
	"context"
	"fmt"
	"regexp"
	"time"
)

// A position in the write-ahead log, as PostgreSQL prints a pg_lsn:
// two hexadecimal numbers of up to 32 bits each.
var walPositionPattern = regexp.MustCompile(`^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$`)

// ValidWALPosition reports whether pos reads as a position in the
// write-ahead log (a client echoes one back, and is not trusted).
func ValidWALPosition(pos string) bool { return walPositionPattern.MatchString(pos) }

// WALPosition is where the primary's write-ahead log ends now: after a
// write has committed, a position at or past its commit. A standby that
// has replayed it shows that write (docs/scaling.md, "Reads from a
// standby").
func (s *Store) WALPosition(ctx context.Context) (string, error) {
	var pos string
	if err := s.pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&pos); err != nil {
		return "", translate(err)
	}
	return pos, nil
}

// WaitReplayed waits up to within for the server to have replayed the
// write-ahead log to pos, polling, and reports whether it has. A server
// that is not in recovery (a primary) has everything it will ever have:
// true.
func (s *Store) WaitReplayed(ctx context.Context, pos string, within time.Duration) (bool, error) {
	if !ValidWALPosition(pos) {
		return false, fmt.Errorf("durable: %q is not a WAL position", pos)
	}
	deadline := time.Now().Add(within)
	for {
		var reached bool
		err := s.pool.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, true)", pos).Scan(&reached)
		if err != nil || reached {
			return reached, translate(err)
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
