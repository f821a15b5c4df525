package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// EnvFlags is a flag set whose flags each have an environment variable
// that supplies the value when the flag is not given. Its usage lists the
// variables beside the flags.
//
// Both binaries' commands use it, so their help and their mistakes read
// the same: -h prints the usage text and every flag with its variable; a
// bad flag prints one line naming it (with the flags it may have meant)
// and the usage's first line, never the whole help.
type EnvFlags struct {
	*flag.FlagSet
	env    map[string]string // flag name → variable
	order  []string
	lists  map[string]bool // flags whose variable holds a list
	usage  string
	stderr io.Writer
}

// NewEnvFlags makes a flag set for a command named name ("rbd submit").
// usage, whose first line is the command's synopsis, is printed above the
// flags by -h.
func NewEnvFlags(name, usage string, stderr io.Writer) *EnvFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Parse says what went wrong, once, in its own words.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &EnvFlags{FlagSet: fs, env: map[string]string{}, lists: map[string]bool{}, usage: usage, stderr: stderr}
}

// Usage prints the command's help: its usage text, then every flag with
// its environment variable and default.
func (e *EnvFlags) Usage() { e.printUsage(e.stderr, e.usage) }

// UsageErrorf reports a mistake in how the command was called (a missing
// argument, say) as a bad flag is reported: the message, then the usage
// line. The error it returns is Reported.
func (e *EnvFlags) UsageErrorf(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(e.stderr, "%s: %s\n%s  ('%s -h' for help)\n", e.Name(), msg, usageLine(e.usage), e.Name())
	return &usageError{msg: msg}
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
//
// -h prints the help and returns flag.ErrHelp; a bad flag is reported
// (see UsageErrorf) and returns an error that is Reported. A bad value in
// a variable is returned, not reported.
func (e *EnvFlags) Parse(args []string) ([]string, error) {
	positional, err := Parse(e.FlagSet, args)
	if errors.Is(err, flag.ErrHelp) {
		e.Usage()
		return nil, err
	}
	if err != nil {
		return nil, e.UsageErrorf("%s", describeFlagError(err, e.FlagSet))
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
		line := "  " + FlagName(f.Name)
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
