package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"log/slog"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/localpg"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/runtime"
)

// lockedBuffer is a log the server writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDatabaseOutageIs503 stops the database under a running API, as
// docs/reliability.md did: every request is then 503 with Retry-After, whether the
// pool's connections die mid-conversation or new ones are refused, and
// the outage is logged once, not once per request.
func TestDatabaseOutageIs503(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "rbd-outage-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := localpg.Start(ctx, localpg.Options{Dir: filepath.Join(dir, "pg"), Settings: map[string]string{"fsync": "off"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Stop() })
	store, err := durable.Open(ctx, durable.Config{URL: pg.URL("postgres"), Schema: "rbd"})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	_, err = store.Migrate(ctx)
	require.NoError(t, err)

	engine := runtime.New(store, runtime.NewHandlers(builtin.Deps{}), runtime.Config{})
	logs := &lockedBuffer{}
	api := httpapi.New(httpapi.Config{
		Engine: engine, Ready: store.Ping,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cl := &client.Client{BaseURL: srv.URL}
	// Fill the pool with live connections, which the stop will kill.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cl.Notify(ctx, apitype.NotificationRequest{CorrelationKey: uuid.NewString(), Status: "completed"})
			require.NoError(t, err)
		}()
	}
	wg.Wait()

	require.NoError(t, pg.Stop())
	for i := 0; i < 30; i++ {
		for _, req := range []struct{ method, path, body string }{
			{"POST", "/v1/notifications", `{"correlation_key": "k` + uuid.NewString() + `", "status": "completed"}`},
			{"GET", "/v1/runbooks/" + uuid.NewString(), ""},
			{"GET", "/v1/runbooks", ""},
		} {
			r, err := http.NewRequestWithContext(ctx, req.method, srv.URL+req.path, strings.NewReader(req.body))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(r)
			require.NoError(t, err)
			body := readAll(t, resp)
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "request %d: %s %s: %s\n%s", i, req.method, req.path, body, logs.String())
			require.Equal(t, "1", resp.Header.Get("Retry-After"))
			require.Contains(t, body, httpapi.CodeUnavailable)
		}
	}
	require.LessOrEqual(t, strings.Count(logs.String(), "\n"), 2, "the outage is logged once:\n%s", logs.String())
	require.Contains(t, logs.String(), "database")
}
