package localpg

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFindBinariesSaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := debianBinaries
	debianBinaries = filepath.Join(t.TempDir(), "nothing", "*", "bin")
	defer func() { debianBinaries = saved }()
	_, err := FindBinaries()
	require.ErrorIs(t, err, ErrNoBinaries)
	require.Contains(t, err.Error(), "apt-get install -y postgresql")
}

// TestStartStopRestart starts a cluster, stops it, and starts it again
// from the same directory, as `rbd serve` does across restarts.
func TestStartStopRestart(t *testing.T) {
	data := filepath.Join(clusterParent(t), "data")
	ctx := context.Background()

	srv, err := Start(ctx, Options{Dir: data, Settings: map[string]string{"fsync": "off"}})
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(data, "PG_VERSION"))
	require.Contains(t, srv.URL("postgres"), "host="+srv.socketDir)
	requireServes(t, srv)
	require.NoError(t, srv.Stop())
	require.NoError(t, srv.Stop(), "stopping twice is harmless")
	_, err = os.Stat(srv.socketDir)
	require.True(t, os.IsNotExist(err), "the private socket directory is removed")

	again, err := Start(ctx, Options{Dir: data})
	require.NoError(t, err)
	requireServes(t, again)

	// A second server on the same directory is refused before it starts,
	// naming the server that holds it and the program that started it.
	_, err = Start(ctx, Options{Dir: data})
	require.ErrorIs(t, err, ErrInUse)
	require.Regexp(t, `PostgreSQL \(pid [0-9]+\), started by ".*localpg.*" \(pid `+strconv.Itoa(os.Getpid())+`\) runs on `, err.Error())
	require.NoError(t, again.Stop())
}

// TestRestartImmediate crashes the server with Restart and checks that it
// serves again at the same address, after crash recovery, with what was
// committed before: the fault rbsoak injects.
func TestRestartImmediate(t *testing.T) {
	ctx := context.Background()
	srv, err := Start(ctx, Options{Dir: filepath.Join(clusterParent(t), "data")})
	require.NoError(t, err)
	defer srv.Stop()
	psql := filepath.Join(srv.binDir, "psql")
	sql := func(q string) string {
		out, err := exec.Command(psql, srv.URL("postgres"), "-Atc", q).CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	sql("create table kept (n int); insert into kept values (7)")
	url, pid := srv.URL("postgres"), srv.Pid()
	require.NotZero(t, pid)

	require.NoError(t, srv.Restart(ctx))
	require.Equal(t, url, srv.URL("postgres"), "clients reconnect to the same address")
	require.NotEqual(t, pid, srv.Pid(), "a new postmaster")
	require.Equal(t, "7", sql("select n from kept"), "what was committed survives the crash")
	log, err := os.ReadFile(filepath.Join(srv.Dir(), "server.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "not properly shut down", "the new server ran crash recovery")
	require.NoError(t, srv.Stop())
}

// clusterParent is a directory for a test's cluster that the postgres
// user can pass through, removed after the test.
func clusterParent(t *testing.T) string {
	t.Helper()
	if _, err := FindBinaries(); err != nil {
		t.Fatalf("the tests need PostgreSQL's binaries: %v", err)
	}
	dir, err := os.MkdirTemp("", "localpg-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func requireServes(t *testing.T, s *Server) {
	t.Helper()
	sock := filepath.Join(s.socketDir, ".s.PGSQL."+itoa(s.port))
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	require.NoError(t, err)
	conn.Close()
	psql := filepath.Join(s.binDir, "psql")
	if isFile(psql) {
		out, err := exec.Command(psql, s.URL("postgres"), "-Atc", "select 40 + 2").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Equal(t, "42", strings.TrimSpace(string(out)))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestClusterUnderAPrivateDirectory: as root, the server runs as postgres,
// which cannot pass through a 0700 directory of root's; it reaches its
// cluster and its socket's directory through the descriptors it is
// handed, not by their paths, so a cluster under /root or a 0700 data
// directory works (docs/daemon.md). It
// restarts there too, and its data survives.
func TestClusterUnderAPrivateDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the cluster to another user")
	}
	private := clusterParent(t)
	require.NoError(t, os.Chmod(private, 0o700)) // owned by root: postgres cannot pass
	t.Setenv("TMPDIR", private)                  // nor to its socket's directory
	dir := filepath.Join(private, "rbd", "pg")
	srv, err := Start(context.Background(), Options{Dir: dir, Settings: map[string]string{"fsync": "off"}})
	require.NoError(t, err)
	requireServes(t, srv)
	require.NoError(t, srv.Restart(context.Background()))
	requireServes(t, srv)
	require.NoError(t, srv.Stop())
	srv, err = Start(context.Background(), Options{Dir: dir, Settings: map[string]string{"fsync": "off"}})
	require.NoError(t, err, "a cluster made before starts again")
	requireServes(t, srv)
	require.NoError(t, srv.Stop())
}

// TestServerDiesWithItsParent runs a server from a child process, kills the
// child with SIGKILL, and checks that the server goes too: a crashed test
// binary or daemon leaves no PostgreSQL behind.
func TestServerDiesWithItsParent(t *testing.T) {
	if dir := os.Getenv("LOCALPG_HELPER_DIR"); dir != "" {
		helperServer(dir)
		return
	}
	dir, err := os.MkdirTemp("", "localpg-orphan-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	defer os.RemoveAll(dir)

	cmd := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithItsParent$")
	cmd.Env = append(os.Environ(), "LOCALPG_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var line [64]byte
	n, err := out.Read(line[:])
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(line[:n])))
	require.NoError(t, err, "helper said %q", line[:n])
	require.True(t, alive(pid))

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	require.False(t, alive(pid), "postgres %d outlived its parent", pid)
}

// helperServer starts a server, prints the postmaster's pid, and waits to
// be killed.
func helperServer(dir string) {
	srv, err := Start(context.Background(), Options{Dir: filepath.Join(dir, "data"), Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString(strconv.Itoa(srv.cmd.Process.Pid) + "\n")
	select {}
}
