package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"
)

// ListFlag is a flag that may be repeated.
type ListFlag []string

func (l *ListFlag) String() string { return strings.Join(*l, ",") }

// Set appends a value.
func (l *ListFlag) Set(v string) error { *l = append(*l, v); return nil }

// ChoiceFlag accepts one of a fixed set of words.
type ChoiceFlag struct {
	Value   string
	Choices []string
}

// Choice makes a ChoiceFlag with its default.
func Choice(def string, choices ...string) *ChoiceFlag {
	return &ChoiceFlag{Value: def, Choices: choices}
}

func (c *ChoiceFlag) String() string { return c.Value }

// Set checks and keeps a value.
func (c *ChoiceFlag) Set(v string) error {
	if !slices.Contains(c.Choices, v) {
		return fmt.Errorf("must be one of %s", strings.Join(c.Choices, ", "))
	}
	c.Value = v
	return nil
}

// Parse parses flags wherever they stand among the positional arguments,
// so `rbc compile x.rbk --verbs v` works as well as the usual order.
// Everything after "--" is positional.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// flag stops at "--" after consuming it, or at the first non-flag.
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
