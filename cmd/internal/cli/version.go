package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Build says which code a binary was built from. rbc and rbd report the
// same one: both print Version for --version, and rbd exports all of it as
// the rbd_build_info metric and logs it at startup.
type Build struct {
	// Version is the module version when the binary was built from a tag
	// ("v1.4.0", "v1.4.0+dirty"); otherwise the commit's first 12 hex
	// digits, with "-dirty" when the work tree had changes
	// ("c9adf9403992-dirty"); "devel" only when nothing says which code
	// it is (a build outside any git checkout, without a version).
	Version string
	// Revision is the full commit hash, or "unknown".
	Revision string
	// Modified reports uncommitted changes in the work tree it was built
	// from.
	Modified bool
	// GoVersion is the Go release that built it ("go1.26.8").
	GoVersion string
}

// Version is the version both binaries print.
func Version() string { return BuildInfo().Version }

// BuildInfo describes the running binary. It is computed once.
func BuildInfo() Build {
	buildOnce.Do(func() {
		info, _ := debug.ReadBuildInfo()
		build = buildFrom(info, gitRevision)
	})
	return build
}

var (
	buildOnce sync.Once
	build     Build
)

// buildFrom reads what the Go toolchain stamped into the binary. `go
// build` in a git checkout stamps the commit (vcs.revision, vcs.modified),
// and since Go 1.24 a module version derived from it: the tag when the
// commit has one, else a pseudo-version, which says less than the commit
// and is not used. `go run`, `go test`, `-buildvcs=false` and a git
// worktree (whose .git is a file the toolchain does not follow) stamp
// nothing: then git is asked about the checkout the source was compiled
// from, through git, so that a binary from a checkout never says just
// "devel".
func buildFrom(info *debug.BuildInfo, git func() (rev string, modified bool, ok bool)) Build {
	b := Build{Revision: "unknown", GoVersion: runtime.Version()}
	var tagged string
	if info != nil {
		b.GoVersion = info.GoVersion
		if v := info.Main.Version; v != "" && v != "(devel)" && !pseudoVersion.MatchString(v) {
			tagged = v
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Revision == "unknown" && tagged == "" {
		if rev, modified, ok := git(); ok {
			b.Revision, b.Modified = rev, modified
		}
	}
	switch {
	case tagged != "":
		b.Version = tagged
	case b.Revision != "unknown":
		b.Version = shortRevision(b.Revision)
		if b.Modified {
			b.Version += "-dirty"
		}
	default:
		b.Version = "devel"
	}
	return b
}

// pseudoVersion matches a Go pseudo-version (v0.0.0-20261126223758-
// c9adf9403992, with an optional +dirty or +incompatible): what the
// toolchain stamps for a commit that has no tag.
var pseudoVersion = regexp.MustCompile(`[-.][0-9]{14}-[0-9a-f]{12}(\+[0-9A-Za-z.]+)?$`)

// shortRevision is the first 12 hex digits of a commit, as Go's
// pseudo-versions abbreviate it.
func shortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// gitRevision asks git for the commit and the state of the checkout this
// package's source was compiled from. It answers ok=false when that
// directory is not a git checkout any more (a binary copied to another
// machine, or built with -trimpath), or git is missing.
func gitRevision() (string, bool, bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", false, false
	}
	dir := filepath.Dir(file)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rev, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false, false
	}
	// What `go build` counts as modified: any change git reports,
	// untracked files included.
	status, err := exec.CommandContext(ctx, "git", "-C", dir, "status", "--porcelain").Output()
	if err != nil {
		return "", false, false
	}
	return strings.TrimSpace(string(rev)), len(strings.TrimSpace(string(status))) > 0, true
}
