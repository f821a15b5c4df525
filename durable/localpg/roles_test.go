package localpg

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGrantMakesTwoNarrowRoles prepares the embedded server's roles twice,
// as two starts of rbd do, and checks what each may do.
func TestGrantMakesTwoNarrowRoles(t *testing.T) {
	dir, err := os.MkdirTemp("", "localpg-roles-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	defer os.RemoveAll(dir)
	ctx := context.Background()
	srv, err := Start(ctx, Options{Dir: filepath.Join(dir, "data"), Settings: map[string]string{"fsync": "off"}})
	require.NoError(t, err)
	defer srv.Stop()
	access := Access{Database: "postgres", DaemonRole: "rbd", DaemonSchema: "rbd", CRUDRole: "rbd_crud", CRUDSchema: "public"}
	require.NoError(t, srv.Grant(ctx, access))

	sql := func(role, stmt string) (string, bool) {
		t.Helper()
		out, err := exec.Command(filepath.Join(srv.binDir, "psql"), srv.RoleURL(role, "postgres"),
			"-v", "ON_ERROR_STOP=1", "-Atc", stmt).CombinedOutput()
		return strings.TrimSpace(string(out)), err == nil
	}
	must := func(role, stmt string) string {
		t.Helper()
		out, ok := sql(role, stmt)
		require.True(t, ok, "%s: %s: %s", role, stmt, out)
		return out
	}
	powers := "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = current_user"
	require.Equal(t, "f|f|f|f|f", must("rbd", powers))
	require.Equal(t, "f|f|f|f|f", must("rbd_crud", powers))

	// rbd makes its tables in its schema, and nothing elsewhere.
	must("rbd", "CREATE TABLE rbd.runbooks (id int)")
	out, ok := sql("rbd", "CREATE SCHEMA other")
	require.False(t, ok)
	require.Contains(t, out, "permission denied for database")
	out, ok = sql("rbd", "CREATE TABLE public.x (id int)")
	require.False(t, ok)
	require.Contains(t, out, "permission denied for schema public")

	// pg.crud uses the tables the superuser makes in public, and cannot
	// reach rbd's, or make tables of its own.
	must("postgres", "CREATE TABLE public.deals (deal_id serial PRIMARY KEY, company text)")
	must("rbd_crud", "INSERT INTO deals (company) VALUES ('Acme')")
	require.Equal(t, "Acme", must("rbd_crud", "SELECT company FROM deals"))
	out, ok = sql("rbd_crud", "SELECT * FROM rbd.runbooks")
	require.False(t, ok)
	require.Contains(t, out, "permission denied for schema rbd")
	out, ok = sql("rbd_crud", "CREATE TABLE public.mine (id int)")
	require.False(t, ok)
	require.Contains(t, out, "permission denied for schema public")

	// A role widened by hand is narrowed at the next start.
	must("postgres", "ALTER ROLE rbd SUPERUSER CREATEDB")
	require.NoError(t, srv.Grant(ctx, access))
	require.Equal(t, "f|f|f|f|f", must("rbd", powers))

	// A schema that is someone else's is not taken over.
	must("postgres", "CREATE SCHEMA theirs")
	err = srv.Grant(ctx, Access{Database: "postgres", DaemonRole: "rbd", DaemonSchema: "theirs"})
	require.ErrorContains(t, err, `schema "theirs" belongs to "postgres", not to rbd's role "rbd"`)
}
