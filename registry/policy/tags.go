package policy

import (
	"path"
	"slices"
)

// The policy tags a verb may carry whose meaning the design names
// (docs/design/semantics.md section 10). A policy may mention them even
// when no verb of the catalogue carries them yet.
const (
	TagReadOnly     = "read_only"
	TagDraftOnly    = "draft_only"
	TagExternalSend = "external_send"
	TagFinancial    = "financial"
	TagDestructive  = "destructive"
	TagPII          = "pii"
)

// WellKnownTags lists the tags above, sorted.
var WellKnownTags = []string{TagDestructive, TagDraftOnly, TagExternalSend, TagFinancial, TagPII, TagReadOnly}

// KnownTags is the tags a policy's patterns are checked against: the well
// known ones and those the catalogue's verbs carry, sorted, without
// repeats.
func KnownTags(catalogue []string) []string {
	out := slices.Concat(WellKnownTags, catalogue)
	slices.Sort(out)
	return slices.Compact(out)
}

// matchTag reports whether a tag pattern (a glob: *, ? and [...] as
// path.Match reads them) matches a tag. Patterns are checked when the
// policy is read, so a bad one never gets here.
func matchTag(pattern, tag string) bool {
	ok, err := path.Match(pattern, tag)
	return err == nil && ok
}

// firstMatch returns the first pattern that matches one of tags, and that
// tag.
func firstMatch(patterns, tags []string) (pattern, tag string, ok bool) {
	for _, p := range patterns {
		for _, t := range tags {
			if matchTag(p, t) {
				return p, t, true
			}
		}
	}
	return "", "", false
}
