package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStatCPUAddsOwnAndChildrenTimes(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime ...
	line := "4242 (postgres: a b) S 1 4242 4242 0 -1 4194560 100 200 0 0 150 50 700 100 20 0 1 0 5 100 10"
	got, err := statCPU(line)
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, got, "(150 + 50 + 700 + 100) ticks at 100 a second")

	_, err = statCPU("4242 postgres S 1")
	require.Error(t, err)
}

func TestStatCPUReadsThisProcess(t *testing.T) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc")
	}
	_, err = statCPU(string(stat))
	require.NoError(t, err)
}
