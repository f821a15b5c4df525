package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// EnvFlags is a flag set whose flags each have an environment variable
// that supplies the value when the flag is not given. Its usage lists the
// variables beside the flags.
type EnvFlags struct {
	*flag.FlagSet
	env   map[string]string // flag name → variable
	order []string
	lists map[string]bool // flags whose variable holds a list
}

// NewEnvFlags makes a flag set for a command. usage is printed above the
// flags by -h.
func NewEnvFlags(name, usage string, stderr io.Writer) *EnvFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := &EnvFlags{FlagSet: fs, env: map[string]string{}, lists: map[string]bool{}}
	fs.Usage = func() { e.printUsage(stderr, usage) }
	return e
}

// Env ties a flag, already defined, to an environment variable.
func (e *EnvFlags) Env(flagName, variable string) {
	e.env[flagName] = variable
	e.order = append(e.order, flagName)
}

// EnvList ties a repeatable flag to a variable holding a list separated by
// the path list separator (":" on Unix), like PATH.
func (e *EnvFlags) EnvList(flagName, variable string) {
	e.Env(flagName, variable)
	e.lists[flagName] = true
}

// Parse parses args (flags may stand among the positional arguments), then
// fills each flag not given from its environment variable.
func (e *EnvFlags) Parse(args []string) ([]string, error) {
	positional, err := Parse(e.FlagSet, args)
	if err != nil {
		return nil, err
	}
	given := map[string]bool{}
	e.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range e.order {
		variable := e.env[name]
		value, ok := os.LookupEnv(variable)
		if given[name] || !ok || value == "" {
			continue
		}
		values := []string{value}
		if e.lists[name] {
			values = strings.Split(value, string(os.PathListSeparator))
		}
		for _, v := range values {
			if err := e.Set(name, v); err != nil {
				return nil, fmt.Errorf("invalid value %q in %s: %v", value, variable, err)
			}
		}
	}
	return positional, nil
}

func (e *EnvFlags) printUsage(w io.Writer, usage string) {
	fmt.Fprint(w, usage)
	fmt.Fprintln(w, "\nFlags (each may also be set by the environment variable shown):")
	e.VisitAll(func(f *flag.Flag) {
		kind, help := flag.UnquoteUsage(f)
		if _, ok := f.Value.(*ChoiceFlag); ok {
			kind = "word"
		}
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintln(w, line)
		var notes []string
		if v := e.env[f.Name]; v != "" {
			notes = append(notes, "env "+v)
		}
		if f.DefValue != "" && f.DefValue != "[]" && f.DefValue != "0" && f.DefValue != "false" {
			notes = append(notes, "default "+f.DefValue)
		}
		if len(notes) > 0 {
			help += " (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(w, "      %s\n", help)
	})
}
