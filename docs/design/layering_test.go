// The package graph held to architecture.md's table. The test lives beside
// the page it reads: it belongs to no package of the code (it imports none),
// the repository's root stays as its layout promises, and the table and
// its test change in one place. `go test ./...` runs it.
package design_test

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// module is the import path of the repository's module; the table names
// packages relative to it.
const module = "github.com/runbookdev/runbook"

// row is one line of architecture.md's package table.
type row struct {
	floor   int
	pkg     string
	planned bool // "(planned)": being built, allowed to be missing
	imports []string
	line    int
}

// pkgInfo is what `go list` says of one of our packages: what it imports
// itself (tests left out) and everything it depends on.
type pkgInfo struct {
	imports []string
	deps    []string
}

// TestTheImportTableMatchesTheCode reads the package table and checks the
// code against it: every package has a row and every row a package; a
// package imports exactly what its row lists (a planned package may be
// listed before anything imports it); and every arrow points from a folder
// to a folder on a lower floor.
func TestTheImportTableMatchesTheCode(t *testing.T) {
	rows := readTable(t, "architecture.md")
	pkgs := listPackages(t)

	byPkg := map[string]*row{}
	for _, r := range rows {
		require.NotContains(t, byPkg, r.pkg, "architecture.md:%d: %s has two rows", r.line, r.pkg)
		byPkg[r.pkg] = r
	}
	for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
		if byPkg[pkg] == nil {
			t.Errorf("%s has no row in architecture.md's package table", pkg)
		}
	}
	floorOf, floorAt := map[string]int{}, map[string]int{}
	for _, r := range rows {
		_, exists := pkgs[r.pkg]
		switch {
		case r.planned && exists:
			t.Errorf("architecture.md:%d: %s exists now: drop its \"(planned)\"", r.line, r.pkg)
		case r.planned:
			t.Logf("architecture.md:%d: %s is planned, not built yet", r.line, r.pkg)
		case !exists:
			t.Errorf("architecture.md:%d: the table names %s, which is not a package of the module", r.line, r.pkg)
		}
		if f, ok := floorOf[folder(r.pkg)]; ok && f != r.floor {
			t.Errorf("architecture.md:%d: %s is on floor %d, but %s/ is on floor %d (line %d)", r.line, r.pkg, r.floor, folder(r.pkg), f, floorAt[folder(r.pkg)])
		} else if !ok {
			floorOf[folder(r.pkg)], floorAt[folder(r.pkg)] = r.floor, r.line
		}
		for _, imp := range r.imports {
			if _, ok := byPkg[imp]; !ok {
				t.Errorf("architecture.md:%d: %s may import %s, which has no row", r.line, r.pkg, imp)
			}
		}
	}
	arrow := func(from, to, what string) {
		ff, ft := floorOf[folder(from)], floorOf[folder(to)]
		if folder(from) != folder(to) && ff <= ft {
			t.Errorf("%s: %s (%s/, floor %d) → %s (%s/, floor %d) does not point down", what, from, folder(from), ff, to, folder(to), ft)
		}
	}
	for _, r := range rows {
		for _, imp := range r.imports {
			arrow(r.pkg, imp, "the table allows an arrow that")
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
		r := byPkg[pkg]
		if r == nil {
			continue // reported above
		}
		for _, imp := range pkgs[pkg].imports {
			if !slices.Contains(r.imports, imp) {
				t.Errorf("%s imports %s, which architecture.md:%d does not allow (may import: %s)", pkg, imp, r.line, orNothing(r.imports))
			}
			arrow(pkg, imp, "an import")
		}
		for _, imp := range r.imports {
			if !slices.Contains(pkgs[pkg].imports, imp) && !byPkg[imp].planned {
				t.Errorf("architecture.md:%d: %s may import %s but does not: the table describes the code as it is, so drop it", r.line, pkg, imp)
			}
		}
	}
}

// Only durable/ talks to PostgreSQL; everything else reaches the database
// through driver's interfaces. The commands that wire a daemon or measure
// and break one on purpose (rbd, the bench and the soak) are the
// exceptions, and of those only the bench and the soak use pgx itself.
func TestLayeringKeepsDurableBehindTheDriver(t *testing.T) {
	mayDependOnDurable := []string{"cmd/rbd", "cmd/rbload", "cmd/rbsoak"}
	mayImportPgx := []string{"cmd/rbload", "cmd/rbsoak"}
	for pkg, info := range listPackages(t) {
		if folder(pkg) == "durable" {
			continue
		}
		for _, imp := range info.imports {
			require.False(t, strings.HasPrefix(imp, "github.com/jackc/pgx") && !slices.Contains(mayImportPgx, pkg),
				"%s imports %s", pkg, imp)
		}
		if slices.Contains(mayDependOnDurable, pkg) {
			continue
		}
		for _, dep := range info.deps {
			require.False(t, dep == "durable" || strings.HasPrefix(dep, "durable/"), "%s depends on %s", pkg, dep)
			require.False(t, strings.HasPrefix(dep, "github.com/jackc/pgx"), "%s depends on %s", pkg, dep)
		}
	}
}

// The engine makes spans through the OpenTelemetry API alone: the SDK and
// the OTLP exporter are rbd's wiring (cmd/rbd), and a program embedding the
// runtime, the API or the client without tracing links neither.
func TestLayeringKeepsTheOpenTelemetrySDKOut(t *testing.T) {
	for pkg, info := range listPackages(t) {
		if pkg == "cmd/rbd" {
			continue
		}
		for _, dep := range info.deps {
			require.False(t, strings.HasPrefix(dep, "go.opentelemetry.io/otel/sdk"), "%s depends on %s", pkg, dep)
			require.False(t, strings.HasPrefix(dep, "go.opentelemetry.io/otel/exporters"), "%s depends on %s", pkg, dep)
		}
	}
}

// TestTheTableReaderRefusesWhatItCannotRead: a row the reader misreads
// would let a wrong arrow through, so a malformed one fails the test.
func TestTheTableReaderRefusesWhatItCannotRead(t *testing.T) {
	for name, body := range map[string]string{
		"no table":        "# Architecture\n\nNo table here.\n",
		"a floor word":    header + "| top | `cmd/rbc` | x | nothing |\n",
		"an unquoted pkg": header + "| 6 | cmd/rbc | x | nothing |\n",
		"two packages":    header + "| 6 | `cmd/rbc`, `cmd/rbd` | x | nothing |\n",
		"an unquoted imp": header + "| 6 | `cmd/rbc` | x | lang |\n",
		"an empty cell":   header + "| 6 | `cmd/rbc` | x | |\n",
		"five cells":      header + "| 6 | `cmd/rbc` | x | nothing | y |\n",
	} {
		_, err := parseTable(strings.NewReader(body))
		require.Error(t, err, name)
	}
	rows, err := parseTable(strings.NewReader("intro\n\n" + header +
		"| 6 | `cmd/rbd` | wiring | `runtime`, `durable/localpg` |\n" +
		"| 5 | `client` (planned) | the Go client | `rbtype` |\n" +
		"| 0 | `rbtype` | names | nothing |\n\nafter the table | not a row |\n"))
	require.NoError(t, err)
	require.Equal(t, []*row{
		{floor: 6, pkg: "cmd/rbd", imports: []string{"runtime", "durable/localpg"}, line: 5},
		{floor: 5, pkg: "client", planned: true, imports: []string{"rbtype"}, line: 6},
		{floor: 0, pkg: "rbtype", line: 7},
	}, rows)
}

const header = "| floor | package | owns | may import |\n| --- | --- | --- | --- |\n"

var (
	tableHeader = regexp.MustCompile(`^\|\s*floor\s*\|\s*package\s*\|\s*owns\s*\|\s*may import\s*\|$`)
	tableRule   = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+$`)
	pkgCell     = regexp.MustCompile("^`([a-z0-9/]+)`( \\(planned\\))?$")
	importItem  = regexp.MustCompile("^`([a-z0-9/]+)`$")
)

func readTable(t *testing.T, path string) []*row {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := parseTable(f)
	require.NoError(t, err, path)
	return rows
}

// parseTable reads the first table whose header is `| floor | package |
// owns | may import |`: one package a row, its floor a number (0 is the
// ground), the package's path in backquotes relative to the module
// (followed by "(planned)" for one being built), and the packages it may
// import in backquotes, separated by commas, or "nothing". The "owns"
// cell is prose and may hold anything but a pipe.
func parseTable(f io.Reader) ([]*row, error) {
	var rows []*row
	sc := bufio.NewScanner(f)
	state, n := 0, 0 // 0 before the table, 1 header seen, 2 in the rows
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case state == 0 && tableHeader.MatchString(line):
			state = 1
		case state == 1:
			if !tableRule.MatchString(line) {
				return nil, fmt.Errorf("line %d: the header is not followed by its rule", n)
			}
			state = 2
		case state == 2 && strings.HasPrefix(line, "|"):
			r, err := parseRow(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			r.line = n
			rows = append(rows, r)
		case state == 2:
			return rows, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no package table (| floor | package | owns | may import |)")
	}
	return rows, nil
}

func parseRow(line string) (*row, error) {
	cells := strings.Split(strings.Trim(line, "|"), "|")
	if len(cells) != 4 {
		return nil, fmt.Errorf("%d cells, want 4 (floor, package, owns, may import)", len(cells))
	}
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	floor, err := strconv.Atoi(cells[0])
	if err != nil || floor < 0 {
		return nil, fmt.Errorf("floor %q is not a number from 0 (the ground) up", cells[0])
	}
	m := pkgCell.FindStringSubmatch(cells[1])
	if m == nil {
		return nil, fmt.Errorf("package %q: want one path in backquotes, optionally followed by (planned)", cells[1])
	}
	r := &row{floor: floor, pkg: m[1], planned: m[2] != ""}
	if cells[3] == "nothing" {
		return r, nil
	}
	for item := range strings.SplitSeq(cells[3], ",") {
		m := importItem.FindStringSubmatch(strings.TrimSpace(item))
		if m == nil {
			return nil, fmt.Errorf("may import %q: want paths in backquotes separated by commas, or nothing", cells[3])
		}
		r.imports = append(r.imports, m[1])
	}
	return r, nil
}

// listPackages runs `go list` once over the module: each package's own
// imports of our packages and its whole dependency closure, paths relative
// to the module for ours. Test files are left out: a test may reach
// anything it needs (a real database through durable/pgtest, say).
func listPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderrOf(err))
	pkgs := map[string]pkgInfo{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "\t")
		require.Len(t, parts, 3, line)
		var info pkgInfo
		for _, imp := range strings.Fields(parts[1]) {
			if rel, ours := ourPackage(imp); ours {
				info.imports = append(info.imports, rel)
			}
		}
		for _, dep := range strings.Fields(parts[2]) {
			rel, _ := ourPackage(dep)
			info.deps = append(info.deps, rel)
		}
		rel, ours := ourPackage(parts[0])
		require.True(t, ours, parts[0])
		pkgs[rel] = info
	}
	return pkgs
}

// ourPackage strips the module's path from one of our packages.
func ourPackage(path string) (string, bool) {
	if rel, ok := strings.CutPrefix(path, module+"/"); ok {
		return rel, true
	}
	return path, false
}

// folder is the top-level folder a package lives in: the unit of a floor.
func folder(pkg string) string {
	first, _, _ := strings.Cut(pkg, "/")
	return first
}

func orNothing(pkgs []string) string {
	if len(pkgs) == 0 {
		return "nothing"
	}
	return strings.Join(pkgs, ", ")
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
