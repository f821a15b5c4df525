// Package clitest holds the testscript commands that rbc's and rbd's
// script tests share.
package clitest

import (
	"errors"
	"os/exec"
	"regexp"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

// Status is the script command `status N command [args...]`: it runs the
// command and requires that it exit with status N (0, 1 or 2, which the
// built-in exec cannot tell apart), keeping its output for stdout, stderr
// and cmp.
func Status(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			ts.Fatalf("status: %v", err)
		}
		got = exitErr.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// Grab is the script command `grab NAME REGEXP`: it sets the environment
// variable NAME to the first submatch of REGEXP in the last command's
// standard output, so that a script can use an id a command printed.
func Grab(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: grab NAME REGEXP")
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		ts.Fatalf("grab: %v", err)
	}
	if re.NumSubexp() < 1 {
		ts.Fatalf("grab: %s has no group to grab", args[1])
	}
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if m == nil {
		ts.Fatalf("grab: no match for %s in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}
