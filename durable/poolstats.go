package durable

import "time"

// PoolStats is a snapshot of the store's connection pool. rbd exports it
// as metrics: a pool too small for the daemon's work shows as acquires
// that waited (Waited, WaitTime) while every connection was in use, a
// limit no statement's timing shows.
type PoolStats struct {
	// Acquires counts the connections handed out since the store opened.
	Acquires int64
	// Waited counts the acquires that found no idle connection and had
	// to wait for one to be opened or given back; WaitTime is their
	// total wait.
	Waited   int64
	WaitTime time.Duration
	// InUse and Idle are the connections now held and now free; Max is
	// the pool's size (--db-max-conns).
	InUse, Idle, Max int32
}

// PoolStats reads the pool's counters.
func (s *Store) PoolStats() PoolStats {
	st := s.pool.Stat()
	return PoolStats{
		Acquires: st.AcquireCount(), Waited: st.EmptyAcquireCount(), WaitTime: st.EmptyAcquireWaitTime(),
		InUse: st.AcquiredConns(), Idle: st.IdleConns(), Max: st.MaxConns(),
	}
}
