package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of /proc's CPU times: USER_HZ, 100 on Linux.
const clockTicks = 100

// postgresCPU is the CPU time PostgreSQL has used so far: the
// postmaster's own and that of its children that have exited, which
// include the backends of connections since closed (a stopped rbd's) and
// finished autovacuum workers. Backends still connected and the
// long-lived background processes (checkpointer, WAL writer) are not
// counted, so the figure is a lower bound. It needs the server on this
// machine: the one rbload started, or one given with --database-url whose
// data directory this process can read; otherwise it is zero.
func (l *lab) postgresCPU() (time.Duration, error) {
	dir := l.dataDir
	if l.pg != nil {
		dir = l.pg.Dir()
	}
	if dir == "" {
		return 0, nil
	}
	pidFile, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(pidFile), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("postmaster.pid: %w", err)
	}
	return processCPU(pid)
}

// backendCPU is the CPU time used so far by the server's backends that
// serve rbd's engine pool (application_name "rbd"), by pid: PostgreSQL's
// side of the daemon's work while its connections are open, which
// postgresCPU cannot see. It needs the server on this machine (its /proc);
// a backend it cannot read is left out, and none, with a remote server,
// gives an empty map.
func (l *lab) backendCPU(ctx context.Context) (map[int]time.Duration, error) {
	pids, err := l.stats.BackendPIDs(ctx, "rbd")
	if err != nil {
		return nil, err
	}
	out := map[int]time.Duration{}
	for _, pid := range pids {
		if cpu, err := processCPU(pid); err == nil {
			out[pid] = cpu
		}
	}
	return out, nil
}

// backendCPUSince is what the backends read by backendCPU used between
// two readings; a backend that connected in between counts from zero, and
// false says there was nothing to read (a remote server).
func backendCPUSince(before, after map[int]time.Duration) (time.Duration, bool) {
	var used time.Duration
	for pid, cpu := range after {
		used += cpu - before[pid]
	}
	return used, len(after) > 0
}

// processCPU is the CPU time a running process has used so far (its
// children's included once they have exited).
func processCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return statCPU(string(stat))
}

// statCPU adds utime, stime, cutime and cstime (fields 14 to 17) of a
// /proc/PID/stat line. The command name, field 2, may hold spaces, so
// fields are counted after its closing parenthesis.
func statCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name in /proc stat")
	}
	fields := strings.Fields(stat[i+1:]) // fields[0] is field 3, the state
	if len(fields) < 15 {
		return 0, errors.New("too few fields in /proc stat")
	}
	var ticks int64
	for _, f := range fields[11:15] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
