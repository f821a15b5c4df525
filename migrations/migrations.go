// Package migrations holds the database schema as numbered SQL files,
// embedded so that rbd carries its schema with it. durable applies them in
// order, each in its own transaction; a file, once released, never changes:
// a change to the schema is a new file.
package migrations

import "embed"

// FS holds the migration files, named NNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
