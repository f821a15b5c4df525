package runtime_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The layering ARCHITECTURE.md promises, checked: the runtime, the HTTP
// API and the compiler's command reach the database only through
// driver, so none of them may depend on durable or on pgx.
func TestLayeringKeepsDurableBehindTheDriver(t *testing.T) {
	for _, pkg := range []string{
		"github.com/runbookdev/runbook/runtime",
		"github.com/runbookdev/runbook/httpapi",
		"github.com/runbookdev/runbook/cmd/rbc",
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, dep := range strings.Fields(string(out)) {
			require.False(t, strings.HasPrefix(dep, "github.com/runbookdev/runbook/durable"), "%s depends on %s", pkg, dep)
			require.False(t, strings.HasPrefix(dep, "github.com/jackc/pgx"), "%s depends on %s", pkg, dep)
		}
	}
}

// The engine makes spans through the OpenTelemetry API alone: the SDK and
// the OTLP exporter are rbd's wiring (cmd/rbd), and a program embedding the
// runtime without tracing links neither.
func TestLayeringKeepsTheOpenTelemetrySDKOut(t *testing.T) {
	for _, pkg := range []string{
		"github.com/runbookdev/runbook/runtime",
		"github.com/runbookdev/runbook/httpapi",
		"github.com/runbookdev/runbook/tracing",
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, dep := range strings.Fields(string(out)) {
			require.False(t, strings.HasPrefix(dep, "go.opentelemetry.io/otel/sdk"), "%s depends on %s", pkg, dep)
			require.False(t, strings.HasPrefix(dep, "go.opentelemetry.io/otel/exporters"), "%s depends on %s", pkg, dep)
		}
	}
}
