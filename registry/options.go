package registry

import "github.com/runbookdev/runbook/verbs"

// Option adjusts how a catalogue is built and checked.
type Option func(*Catalogue)

// DaemonSchema tells the catalogue which schema rbd keeps its tables in,
// so that a pg.crud verb naming a table there is refused (V015). rbd
// passes its --schema; without the option (rbc, which has no daemon) the
// default, migrations.DefaultSchema, is assumed.
func DaemonSchema(name string) Option {
	return func(c *Catalogue) { c.daemonSchema = name }
}

// WithInvalid adds the definitions that have errors of their own
// (verbs.Loaded's Invalid): the catalogue checks them too, so that one
// run reports every error, and knows their names, so that calling one is
// "defined but invalid", not "unknown". They are never callable.
func WithInvalid(defs []*verbs.Definition) Option {
	return func(c *Catalogue) {
		for _, d := range defs {
			c.invalid[d.FullName()] = d
		}
	}
}
