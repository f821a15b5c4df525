package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/cmd/internal/clitest"
)

// TestCLIReferenceCoversEveryCommand fails when docs/reference/cli.md
// leaves out a command of rbd's usage or a flag one accepts. The flags
// every client command takes are documented once, under "The client".
func TestCLIReferenceCoversEveryCommand(t *testing.T) {
	raw, err := os.ReadFile(clitest.CLIReference)
	require.NoError(t, err)
	common, _, found := strings.Cut(clitest.Section(string(raw), "The client"), "\n#### ")
	require.True(t, found, "cli.md has no section \"The client\" with the client commands under it")
	clitest.RequireDocumented(t, "rbd", usage, common, run)
}
