package main

import (
	"context"
	"fmt"
	"io"

	"github.com/runbookdev/runbook/cmd/internal/cli"
)

const migrateUsage = `Usage: rbd migrate [flags]

Brings the database's schema to this binary's version and exits. Several
daemons may migrate at once; they take turns. A database migrated by a
newer rbd is refused.
`

// parseNoArgs reads the flags of a database command that takes no
// positional arguments. When the command should not go on, status is its
// exit status: 0 after -h, 2 for bad flags or stray arguments.
func parseNoArgs(fs *cli.EnvFlags, args []string, name string, stderr io.Writer) (status int, ok bool) {
	rest, err := fs.Parse(args)
	if err != nil {
		return parseStatus(err, stderr), false
	}
	if len(rest) > 0 {
		_ = fs.UsageErrorf("%s takes no arguments, got %q", name, rest)
		return exitCantRun, false
	}
	return 0, true
}

func runMigrate(args []string, stdout, stderr io.Writer) int {
	var db databaseFlags
	var logs logFlags
	fs := cli.NewEnvFlags("rbd migrate", migrateUsage, stderr)
	db.register(fs)
	logs.register(fs)
	if status, ok := parseNoArgs(fs, args, "migrate", stderr); !ok {
		return status
	}
	log := logs.logger(stderr)
	ctx := context.Background()
	d, err := db.open(ctx, log)
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	defer d.close(log)
	before, err := d.store.MigrationStatus(ctx)
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	after, err := d.store.Migrate(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "rbd: %v\n", err)
		return exitFailed
	}
	if before.Current == after.Current {
		fmt.Fprintf(stdout, "the database schema is current (version %d)\n", after.Current)
	} else {
		fmt.Fprintf(stdout, "migrated the database schema from version %d to %d\n", before.Current, after.Current)
	}
	return exitOK
}
