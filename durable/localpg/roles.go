package localpg

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// Access says which roles connect to the server and what each may do:
// the daemon's role owns its schema and nothing more, and pg.crud's role
// may read and write the tables of the application's schema and nothing
// more. Neither is a superuser or may create databases or roles. It is
// what docs/daemon.md asks an operator to grant on a managed PostgreSQL.
type Access struct {
	// Database is the database both roles work in.
	Database string
	// DaemonRole owns DaemonSchema, where rbd keeps its tables.
	DaemonRole   string
	DaemonSchema string
	// CRUDRole is pg.crud's role, granted CRUDSchema; empty grants
	// nothing to pg.crud (rbd migrate needs no pg.crud).
	CRUDRole   string
	CRUDSchema string
}

// Grant creates the roles that are missing, takes from them any power
// beyond Access (every start, so a role widened by hand is narrowed
// again), and grants what Access says. It connects as the superuser that
// initdb created.
func (s *Server) Grant(ctx context.Context, a Access) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL(a.Database))
	if err != nil {
		return fmt.Errorf("error connecting to the embedded PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := ensureRole(ctx, conn, a.DaemonRole); err != nil {
		return err
	}
	if err := ensureOwnSchema(ctx, conn, a.DaemonSchema, a.DaemonRole); err != nil {
		return err
	}
	if a.CRUDRole == "" {
		return nil
	}
	if err := ensureRole(ctx, conn, a.CRUDRole); err != nil {
		return err
	}
	return grantCRUD(ctx, conn, a.CRUDSchema, a.CRUDRole)
}

// ensureRole creates a login role without special powers, or takes them
// from an existing one.
func ensureRole(ctx context.Context, conn *pgx.Conn, role string) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", role).Scan(&exists); err != nil {
		return fmt.Errorf("error looking up role %q: %w", role, err)
	}
	verb := "ALTER"
	if !exists {
		verb = "CREATE"
	}
	sql := verb + " ROLE " + ident(role) + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("error preparing role %q: %w", role, err)
	}
	return nil
}

// ensureOwnSchema creates the daemon's schema, owned by its role. A schema
// of that name owned by someone else is refused rather than taken over:
// it may hold what is not rbd's.
func ensureOwnSchema(ctx context.Context, conn *pgx.Conn, schema, role string) error {
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident(schema)+" AUTHORIZATION "+ident(role)); err != nil {
		return fmt.Errorf("error creating schema %q: %w", schema, err)
	}
	var owner string
	err := conn.QueryRow(ctx, `SELECT r.rolname FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner WHERE n.nspname = $1`,
		schema).Scan(&owner)
	if err != nil {
		return fmt.Errorf("error looking up schema %q: %w", schema, err)
	}
	if owner != role {
		return fmt.Errorf("schema %q belongs to %q, not to rbd's role %q; rbd keeps its tables in a schema of its own: choose another", schema, owner, role)
	}
	return nil
}

// grantCRUD lets pg.crud's role use the application's schema: read and
// write the tables the superuser creates there from now on (default
// privileges), and nothing else. Tables already there are not granted:
// they may be an earlier rbd's, which kept its own tables in public.
// Nobody else may create tables there either.
func grantCRUD(ctx context.Context, conn *pgx.Conn, schema, role string) error {
	s, r := ident(schema), ident(role)
	for _, sql := range []string{
		"CREATE SCHEMA IF NOT EXISTS " + s,
		"REVOKE CREATE ON SCHEMA " + s + " FROM PUBLIC",
		"GRANT USAGE ON SCHEMA " + s + " TO " + r,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA " + s + " GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO " + r,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA " + s + " GRANT USAGE, SELECT ON SEQUENCES TO " + r,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("error granting %q to pg.crud's role: %s: %w", schema, sql, err)
		}
	}
	return nil
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// RoleURL is a connection string for database db on this server, as role.
func (s *Server) RoleURL(role, db string) string {
	u := url.URL{Scheme: "postgres", User: url.User(role), Path: "/" + db}
	q := url.Values{"host": {s.socketDir}, "port": {fmt.Sprint(s.port)}, "sslmode": {"disable"}}
	u.RawQuery = q.Encode()
	return u.String()
}
