package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuildFromWhatTheToolchainStamped(t *testing.T) {
	const rev = "c9adf94039929fe46778e716ff0e2dbe92d733a9"
	noGit := func() (string, bool, bool) { return "", false, false }
	askedGit := func() (string, bool, bool) { return "0123456789abcdef0123456789abcdef01234567", true, true }
	stamped := func(version string, modified string) *debug.BuildInfo {
		info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/runbookdev/runbook", Version: version}}
		if modified != "" {
			info.Settings = []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
				{Key: "vcs.modified", Value: modified}}
		}
		return info
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		git  func() (string, bool, bool)
		want Build
	}{{
		name: "go install of a tag: the module version, with its commit when stamped",
		info: stamped("v1.4.0", "false"),
		git:  noGit,
		want: Build{Version: "v1.4.0", Revision: rev, GoVersion: "go1.26.8"},
	}, {
		name: "go install module@v1.4.0 stamps no commit",
		info: stamped("v1.4.0", ""),
		git:  askedGit,
		want: Build{Version: "v1.4.0", Revision: "unknown", GoVersion: "go1.26.8"},
	}, {
		name: "go build of a commit without a tag: the pseudo-version says less than the commit",
		info: stamped("v0.0.0-20261126223758-c9adf9403992+dirty", "true"),
		git:  noGit,
		want: Build{Version: "c9adf9403992-dirty", Revision: rev, Modified: true, GoVersion: "go1.26.8"},
	}, {
		name: "go build before Go 1.24: (devel) and the commit",
		info: stamped("(devel)", "false"),
		git:  noGit,
		want: Build{Version: "c9adf9403992", Revision: rev, GoVersion: "go1.26.8"},
	}, {
		name: "go run, go test, -buildvcs=false: git is asked",
		info: stamped("(devel)", ""),
		git:  askedGit,
		want: Build{Version: "0123456789ab-dirty", Revision: "0123456789abcdef0123456789abcdef01234567", Modified: true,
			GoVersion: "go1.26.8"},
	}, {
		name: "outside any checkout, with no version: devel",
		info: stamped("(devel)", ""),
		git:  noGit,
		want: Build{Version: "devel", Revision: "unknown", GoVersion: "go1.26.8"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, buildFrom(tc.info, tc.git))
		})
	}
}

func TestPseudoVersions(t *testing.T) {
	for v, pseudo := range map[string]bool{
		"v0.0.0-20261126223758-c9adf9403992":        true,
		"v0.0.0-20261126223758-c9adf9403992+dirty":  true,
		"v1.4.1-0.20261126223758-c9adf9403992":      true,
		"v1.5.0-rc.1.0.20261126223758-c9adf9403992": true,
		"v1.4.0":       false,
		"v1.4.0+dirty": false,
		"v1.5.0-rc.1":  false,
	} {
		require.Equal(t, pseudo, pseudoVersion.MatchString(v), v)
	}
}

// TestRbcAndRbdPrintTheSameVersion builds both binaries from this checkout,
// as a user would, and asks each for its version: the same string, naming
// the checkout's commit (or its tag), never "devel".
func TestRbcAndRbdPrintTheSameVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	rev, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "./cmd/rbc", "./cmd/rbd")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	// Asked after the build, so that a file changed meanwhile cannot make
	// the expectation stricter than what was built.
	status, err := exec.Command("git", "-C", root, "status", "--porcelain").Output()
	require.NoError(t, err)
	want := strings.TrimSpace(string(rev))[:12]
	if len(strings.TrimSpace(string(status))) > 0 {
		want += "-dirty"
	}
	tagged := exec.Command("git", "-C", root, "describe", "--exact-match", "--tags", "HEAD").Run() == nil

	versions := map[string]string{}
	for name, pattern := range map[string]*regexp.Regexp{
		"rbc": regexp.MustCompile(`^rbc (\S+) \(plan schema [0-9]+\)\n$`),
		"rbd": regexp.MustCompile(`^rbd (\S+)\n$`),
	} {
		out, err := exec.Command(filepath.Join(bin, name), "--version").Output()
		require.NoError(t, err, name)
		m := pattern.FindStringSubmatch(string(out))
		require.NotNil(t, m, "%s --version printed %q", name, out)
		versions[name] = m[1]
	}
	require.Equal(t, versions["rbc"], versions["rbd"])
	require.NotContains(t, versions["rbc"], "devel")
	if !tagged || !strings.HasPrefix(versions["rbc"], "v") {
		require.Equal(t, want, versions["rbc"])
	}
}
