package registry

// Option adjusts how a catalogue is built and checked.
type Option func(*Catalogue)

// DaemonSchema tells the catalogue which schema rbd keeps its tables in,
// so that a pg.crud verb naming a table there is refused (V015). rbd
// passes its --schema; without the option (rbc, which has no daemon) the
// default, migrations.DefaultSchema, is assumed.
func DaemonSchema(name string) Option {
	return func(c *Catalogue) { c.daemonSchema = name }
}
