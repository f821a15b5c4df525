package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/runbookdev/runbook/lang"
)

// ErrUsage marks an error a flag set has already reported, with the
// command's usage line: the caller exits (status 2) without saying more.
var ErrUsage = errors.New("usage error")

// usageError is a reported flag or argument mistake.
type usageError struct{ msg string }

func (u *usageError) Error() string        { return u.msg }
func (u *usageError) Is(target error) bool { return target == ErrUsage }

// Reported reports whether err was already said to the user by the flag
// set: -h (the help was printed) or a usage error.
func Reported(err error) bool {
	return errors.Is(err, flag.ErrHelp) || errors.Is(err, ErrUsage)
}

// The messages of Go's flag package, whose wording is stable, rewritten
// to name the flag as users type it (--name) and to suggest a near one.
var (
	flagUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	flagNeedsArg  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	flagBadBool   = regexp.MustCompile(`^invalid boolean value (".*") for -+([^:]*): .*$`)
	flagBadValue  = regexp.MustCompile(`^invalid value (".*") for flag -+([^:]*): (.*)$`)
)

// describeFlagError says what was wrong with the flags in the user's
// terms: the flag, and for an unknown one the flags it may have meant.
func describeFlagError(err error, fs *flag.FlagSet) string {
	msg := err.Error()
	if m := flagUndefined.FindStringSubmatch(msg); m != nil {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		var sugg []string
		for _, s := range lang.Suggest(m[1], names) {
			sugg = append(sugg, FlagName(s))
		}
		return "unknown flag " + FlagName(m[1]) + DidYouMean("", sugg)
	}
	if m := flagNeedsArg.FindStringSubmatch(msg); m != nil {
		return "flag " + FlagName(m[1]) + " needs a value"
	}
	if m := flagBadBool.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("flag %s is true or false, not %s (%s alone means true)", FlagName(m[2]), m[1], FlagName(m[2]))
	}
	if m := flagBadValue.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("invalid value %s for flag %s: %s", m[1], FlagName(m[2]), m[3])
	}
	return msg
}

// FlagName is a flag as the help writes it: -o for a one-letter flag,
// --name for the others (either form is accepted).
func FlagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// DidYouMean is " (did you mean X?)", or " (did you mean X or Y?)", for
// the suggestions, each with prefix ("--" for a flag); empty for none.
func DidYouMean(prefix string, suggestions []string) string {
	if len(suggestions) == 0 {
		return ""
	}
	quoted := make([]string, len(suggestions))
	for i, s := range suggestions {
		quoted[i] = prefix + s
	}
	return " (did you mean " + strings.Join(quoted, " or ") + "?)"
}

// UnknownCommand reports a command a binary does not have, with the ones
// it may have meant, and one line on where the commands are listed. It
// returns the exit status for a command that cannot run.
func UnknownCommand(w io.Writer, binary, name string, commands []string) int {
	var sugg []string
	for _, s := range lang.Suggest(name, commands) {
		sugg = append(sugg, `"`+s+`"`)
	}
	fmt.Fprintf(w, "%s: unknown command %q%s\nRun '%s help' for the list of commands.\n", binary, name, DidYouMean("", sugg), binary)
	return 2
}

// usageLine is the first line of a command's usage text, the one printed
// after a mistake: what the command takes, not every flag.
func usageLine(usage string) string {
	line, _, _ := strings.Cut(strings.TrimLeft(usage, "\n"), "\n")
	return line
}
