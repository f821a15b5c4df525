package runtime

import (
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/runbookdev/runbook/compiler"
)

// MaxNameLength bounds a runbook's name, in bytes: a label for people,
// kept on every runbook row and shown in every list.
const MaxNameLength = 200

// CheckName says what is wrong with a runbook name given at submit, or ""
// when nothing is. A name is shown to people and in lists: it has a
// character that is not a space, and none that is not printable.
func CheckName(name string) string {
	switch {
	case len(name) > MaxNameLength:
		return fmt.Sprintf("is %d bytes long; at most %d are allowed", len(name), MaxNameLength)
	case strings.TrimSpace(name) == "":
		return "is empty"
	}
	for _, c := range name {
		if c == unicode.ReplacementChar || !unicode.IsPrint(c) {
			return "holds a character that is not printable"
		}
	}
	return ""
}

// nameOf is a runbook's name: the one given, else its first source file's
// base name without the extension (kyc-onboarding.rbk is
// "kyc-onboarding"), else none. Names that do not fit CheckName are not
// made up: a file named only with unprintable characters gives none.
func nameOf(given string, plan *compiler.Plan) string {
	if given != "" {
		return strings.TrimSpace(given)
	}
	if plan == nil || len(plan.Sources) == 0 {
		return ""
	}
	base := path.Base(strings.ReplaceAll(plan.Sources[0], "\\", "/"))
	base = strings.TrimSuffix(base, path.Ext(base))
	if len(base) > MaxNameLength || CheckName(base) != "" {
		return ""
	}
	return base
}
