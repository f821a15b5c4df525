package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// browser is a headless Chromium driven through the DevTools protocol,
// with what its pages wrote to the console.
type browser struct {
	ctx   context.Context
	shots string // where screenshots go

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

// chromiumPath finds Debian's chromium (what .ci/ensure-chromium installs)
// or another Chrome. Without one the browser tests skip on a developer's
// machine, but fail in CI, where a skip would hide that they never ran.
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "" {
		t.Skip("browser tests skipped: no chromium installed (run .ci/ensure-chromium, or apt-get install chromium)")
	}
	t.Fatal("CI is set but no chromium is installed: .ci/ensure-chromium should have installed it")
	return ""
}

// newBrowser starts Chromium with a fresh profile and a window of this
// size. The flags keep it from calling Google's services, which this
// machine's network refuses, and let it run as root.
func newBrowser(t testing.TB, width, height int) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	b := &browser{ctx: ctx, shots: t.TempDir()}
	messages := chromedp.Console(ctx)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))))
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.messages = append(b.messages, m)
			b.mu.Unlock()
		}
	}()
	return b
}

// do runs actions, failing the test with the page's console on error.
func (b *browser) do(t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		t.Fatalf("%s: %v\nconsole:\n%s", what, err, b.console())
	}
}

// eval evaluates a JavaScript expression on the page.
func eval[T any](t testing.TB, b *browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// shot saves a screenshot of the viewport as name.png in the test's
// screenshot directory, and returns its path.
func (b *browser) shot(t testing.TB, name string) string {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	p := filepath.Join(b.shots, name+".png")
	require.NoError(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot %s", p)
	// RBD_SCREENSHOTS=DIR keeps every screenshot, to look at after the
	// test (its own directory goes with it).
	if dir := os.Getenv("RBD_SCREENSHOTS"); dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, t.Name()+"-"+name+".png"), png, 0o644))
	}
	return p
}

func (b *browser) console() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	for _, m := range b.messages {
		s.WriteString(string(m.Type) + ": " + m.Text + "\n")
	}
	return s.String()
}

// problems are the page's uncaught exceptions and Content-Security-Policy
// violations: each one a bug in the console.
func (b *browser) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.messages {
		if m.Type == chromedp.ConsoleException || strings.Contains(m.Text, "Content Security Policy") {
			out = append(out, string(m.Type)+": "+m.Text)
		}
	}
	return out
}
