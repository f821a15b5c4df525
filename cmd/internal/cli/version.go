package cli

import "runtime/debug"

// Version is the version both binaries report: the module version they
// were built from, or, for a build from a checkout, "devel-" and the
// first 12 digits of its commit ("+dirty" when it had changes), or
// "devel" when the build says nothing.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel-" + rev + dirty
}
