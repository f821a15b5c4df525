// Package docs embeds the reference pages that programs hand out as they
// are written: rbc mcp serves the language and verb references to agents
// as resources, so what an agent reads is what a person reads.
package docs

import "embed"

// Reference holds reference/language.md and reference/verbs.md.
//
//go:embed reference/language.md reference/verbs.md
var Reference embed.FS
