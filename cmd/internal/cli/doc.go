// Package cli holds what rbc and rbd share on the command line: flags that
// may stand among the positional arguments, flags that fall back to
// environment variables, and aligned tables and JSON for output.
package cli
