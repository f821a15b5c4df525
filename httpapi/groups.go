package httpapi

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// groupName is what a group of tokens may be called: the names a step's
// :approvers may give (docs/design/language.md v1.4), letters, digits,
// _, . and -, not starting with . or -.
var groupName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// parseGroups reads a token line's groups=compliance,dpo: the groups whose
// gates (a step's :approvers) the token may decide. A malformed name is an
// error, so that rbd refuses to start rather than grant other than meant.
func parseGroups(value string) ([]string, error) {
	var out []string
	for _, g := range strings.Split(value, ",") {
		if !groupName.MatchString(g) {
			return nil, fmt.Errorf("group %q must be letters, digits, _, . and -, at most 64, not starting with . or -", g)
		}
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out, nil
}
