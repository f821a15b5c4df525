package clitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// A fake is an HTTP service a script starts for the runbooks it runs to
// call, answering from a table of routes and recording every request, so
// that an example runs end to end without the real services.
//
//	fake NAME FILE   start a service answering as FILE says; $NAME is its URL
//	fakelog NAME     print the requests it received, one a line
//
// It is also an HTTP proxy: a daemon started with HTTP_PROXY=$NAME sends
// it the requests its verbs make to their real hosts (an example's
// http://db-api.internal:8070/...), so the verbs stay as they are used.
//
// FILE holds one route a line, blank lines and lines starting with # left
// out:
//
//	METHOD PATH [if TEXT] STATUS BODY
//
// PATH is a path (/v1/promote), or a host and path for a request that came
// through the proxy (db-api.internal:8070/v1/promote); either may carry a
// query (?cluster=main: its parameters sorted, as url.Values encodes
// them) to match only requests with that query. "if TEXT" matches only
// requests whose body holds TEXT (no spaces). The first route that
// matches answers with STATUS and BODY (JSON, to the end of the line); a
// request no route matches is answered 404. fakelog prints "METHOD PATH
// BODY" for each request in the order they came (PATH with its host when
// it came through the proxy), the body as compact JSON with its keys
// sorted; the same Idempotency-Key seen again is marked "(repeat)".
type fake struct {
	mu     sync.Mutex
	routes []fakeRoute
	log    []string
	keys   map[string]bool
}

type fakeRoute struct {
	method, path, when string
	status             int
	body               string
}

// fakes are the services of the scripts running, by script and name.
var fakes sync.Map // map[*testscript.TestScript]map[string]*fake

// Fake is the script command `fake NAME FILE`.
func Fake(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: fake NAME FILE")
	}
	f := &fake{keys: map[string]bool{}}
	for n, line := range strings.Split(ts.ReadFile(args[1]), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := parseRoute(line)
		if err != nil {
			ts.Fatalf("fake: %s:%d: %v", args[1], n+1, err)
		}
		f.routes = append(f.routes, r)
	}
	srv := httptest.NewServer(f)
	ts.Defer(srv.Close)
	byName, loaded := fakes.LoadOrStore(ts, &sync.Map{})
	if !loaded {
		ts.Defer(func() { fakes.Delete(ts) })
	}
	byName.(*sync.Map).Store(args[0], f)
	ts.Setenv(args[0], srv.URL)
}

// FakeLog is the script command `fakelog NAME`.
func FakeLog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakelog NAME")
	}
	byName, ok := fakes.Load(ts)
	var f any
	if ok {
		f, ok = byName.(*sync.Map).Load(args[0])
	}
	if !ok {
		ts.Fatalf("fakelog: no fake %s", args[0])
	}
	fk := f.(*fake)
	fk.mu.Lock()
	defer fk.mu.Unlock()
	for _, line := range fk.log {
		_, _ = fmt.Fprintln(ts.Stdout(), line)
	}
}

func parseRoute(line string) (fakeRoute, error) {
	fields := strings.Fields(line)
	if len(fields) < 4 {
		return fakeRoute{}, fmt.Errorf("want METHOD PATH [if TEXT] STATUS BODY, got %q", line)
	}
	r := fakeRoute{method: fields[0], path: fields[1]}
	rest := fields[2:]
	if rest[0] == "if" {
		if len(rest) < 4 {
			return fakeRoute{}, fmt.Errorf("want if TEXT STATUS BODY after the path, got %q", line)
		}
		r.when, rest = rest[1], rest[2:]
	}
	status, err := strconv.Atoi(rest[0])
	if err != nil {
		return fakeRoute{}, fmt.Errorf("bad status %q", rest[0])
	}
	r.status = status
	r.body = strings.TrimSpace(line[strings.Index(line, " "+rest[0]+" ")+len(rest[0])+2:])
	if !json.Valid([]byte(r.body)) {
		return fakeRoute{}, fmt.Errorf("the body %s is not JSON", r.body)
	}
	return r, nil
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	bare := r.URL.Host + r.URL.Path // a proxied request names its host
	path := bare
	if q := r.URL.Query(); len(q) > 0 {
		path += "?" + q.Encode()
	}
	line := r.Method + " " + path
	if b := canonicalJSON(body); b != "" {
		line += " " + b
	}
	f.mu.Lock()
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if f.keys[key] {
			line += " (repeat)"
		}
		f.keys[key] = true
	}
	f.log = append(f.log, line)
	f.mu.Unlock()
	for _, rt := range f.routes {
		if rt.method != r.Method || (rt.path != bare && rt.path != path) || !bytes.Contains(body, []byte(rt.when)) {
			continue
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rt.status)
		_, _ = io.WriteString(w, rt.body)
		return
	}
	http.Error(w, `{"error": "no route"}`, http.StatusNotFound)
}

// canonicalJSON is a body as compact JSON with sorted keys, or as it is
// when it is not JSON.
func canonicalJSON(b []byte) string {
	if len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v) // objects' keys sorted
	return string(out)
}
