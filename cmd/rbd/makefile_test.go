package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeDemoBuildsOnlyWhatItRuns reads what make demo and make examples
// would run (make -n) and checks that they build rbc and rbd only: a first
// make demo on a fresh clone must not build the bench's River and DBOS
// runners, modules of their own whose dependencies it would download.
func TestMakeDemoBuildsOnlyWhatItRuns(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	for _, target := range []string{"demo", "examples"} {
		out, err := exec.Command("make", "-n", "-C", "../..", "--no-print-directory", target).CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		builds := 0
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "rbload") || strings.Contains(line, "rbriver") || strings.Contains(line, "rbdbos") {
				t.Errorf("make %s runs %q, which is the bench's", target, line)
			}
			f := strings.Fields(line)
			if len(f) < 2 || f[0] != "go" || f[1] != "build" {
				continue
			}
			builds++
			for _, arg := range f[2:] {
				if strings.HasPrefix(arg, "./") && arg != "./cmd/rbc" && arg != "./cmd/rbd" {
					t.Errorf("make %s builds %s; it runs only rbc and rbd: %q", target, arg, line)
				}
			}
		}
		if builds == 0 {
			t.Errorf("make -n %s shows no go build of rbc and rbd:\n%s", target, out)
		}
	}
}

// TestNoBuildOutputCommitted checks that no executable the Go toolchain
// builds (an ELF file) is in the repository: .gitignore covers where
// go build leaves them.
func TestNoBuildOutputCommitted(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout git can read (%v)", err)
	}
	files := bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0})
	if len(files) < 10 {
		t.Fatalf("git ls-files lists %d files", len(files))
	}
	for _, name := range files {
		f, err := os.Open(filepath.Join(root, string(name)))
		if err != nil {
			continue // deleted in the work tree, not yet committed
		}
		head := make([]byte, 4)
		n, _ := io.ReadFull(f, head)
		f.Close()
		if n == 4 && string(head) == "\x7fELF" {
			t.Errorf("%s is an executable in git; build output belongs in bin/ (and .gitignore)", name)
		}
	}
}
