package policy

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// VerbScope is the verbs a token may use (docs/design/semantics.md
// section 10): globs over full verb names, as a token line's verbs=
// writes them (kyc.*,screening.run). Nil allows every verb.
type VerbScope []string

// verbGlob is what a pattern of a verb scope may hold: the characters of
// verb names, and the glob's own.
var verbGlob = regexp.MustCompile(`^[A-Za-z0-9_.*?\[\]^!-]+$`)

// ParseVerbScope reads a token line's verbs= value: patterns separated by
// commas. A pattern that is empty, malformed, or holds a character no
// verb name has is an error: a scope must never allow more than meant.
func ParseVerbScope(value string) (VerbScope, error) {
	var out VerbScope
	for _, p := range strings.Split(value, ",") {
		if p == "" {
			return nil, fmt.Errorf("verbs=%q has an empty pattern (patterns are separated by single commas)", value)
		}
		if _, err := path.Match(p, ""); err != nil || !verbGlob.MatchString(p) {
			return nil, fmt.Errorf("verbs= pattern %q is malformed (a verb name, or a glob with * ? and [...], as in kyc.*)", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// Allows reports whether the scope allows a verb.
func (v VerbScope) Allows(verb string) bool {
	if v == nil {
		return true
	}
	for _, p := range v {
		if ok, err := path.Match(p, verb); err == nil && ok {
			return true
		}
	}
	return false
}

// String is the scope as a token line writes it; "*" for every verb.
func (v VerbScope) String() string {
	if v == nil {
		return "*"
	}
	return strings.Join(v, ",")
}
