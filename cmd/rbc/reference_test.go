package main

import (
	"testing"

	"github.com/runbookdev/runbook/cmd/internal/clitest"
)

// TestCLIReferenceCoversEveryCommand fails when docs/reference/cli.md
// leaves out a command of rbc's usage or a flag one accepts.
func TestCLIReferenceCoversEveryCommand(t *testing.T) {
	clitest.RequireDocumented(t, "rbc", usage, "", run)
}
