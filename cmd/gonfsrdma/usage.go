package main

// usage.go: usage errors that say what to type instead. cli v3's own
// messages ("flag provided but not defined: -prot", a page of help) are
// replaced by one line naming the command, the closest flag or command
// and an example, and the exit code 2 every usage error has.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/gonfsrdma/gonfsrdma/internal/editdist"
)

// explainUsage installs the usage-error handlers on root and every
// command below it.
func explainUsage(root *cli.Command) {
	var walk func(c *cli.Command)
	walk = func(c *cli.Command) {
		c.OnUsageError = onUsageError
		if len(c.Commands) > 0 && c.Action == nil {
			// A command of commands runs this when its first
			// argument names none of them.
			c.Action = func(_ context.Context, c *cli.Command) error {
				if c.NArg() == 0 {
					return cli.ShowSubcommandHelp(c)
				}
				return unknownCommand(c, c.Args().First())
			}
		}
		for _, sub := range c.Commands {
			walk(sub)
		}
	}
	walk(root)
	root.Action = func(_ context.Context, c *cli.Command) error {
		if c.NArg() == 0 {
			return cli.ShowRootCommandHelp(c)
		}
		return unknownCommand(c, c.Args().First())
	}
}

// unknownCommand is the error for `gonfsrdma [CMD] NAME` with no command
// NAME.
func unknownCommand(c *cli.Command, name string) error {
	path := commandPath(c)
	msg := fmt.Sprintf("%s: there is no command %q", path, name)
	if s := closestCommand(c.Commands, name); s != "" {
		msg += fmt.Sprintf("; did you mean `%s %s`?", path, s)
	}
	return cli.Exit(msg+fmt.Sprintf(" (`%s --help` lists the commands)", path), exitUsage)
}

// commandPath is the command as typed, "gonfsrdma exports check".
func commandPath(c *cli.Command) string {
	l := c.Lineage()
	names := make([]string, 0, len(l))
	for i := len(l) - 1; i >= 0; i-- {
		names = append(names, l[i].Name)
	}
	if len(names) > 0 {
		names[0] = "gonfsrdma"
	}
	return strings.Join(names, " ")
}

// closestCommand is the visible command whose name is nearest name, if
// it is near enough to be a typo.
func closestCommand(cmds []*cli.Command, name string) string {
	best, bestD := "", -1
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		for _, n := range c.Names() {
			if d, ok := typo(n, name); ok && (bestD < 0 || d < bestD) {
				best, bestD = n, d
			}
		}
	}
	return best
}

// typo says whether typed may be a mistyping of name, and how far it is:
// a prefix of at least two letters, the same name in another case, or
// within a third of the name's length in edits (at most two).
func typo(name, typed string) (int, bool) {
	if strings.EqualFold(name, typed) {
		return 0, true
	}
	if len(typed) >= 2 && strings.HasPrefix(name, typed) {
		return 1, true
	}
	d := editdist.Distance(name, typed)
	return d, len(name) >= 3 && d <= max(1, min(2, len(name)/3))
}

// onUsageError rewrites cli's flag parsing errors into one line that
// names the command, what was wrong and what to type.
func onUsageError(_ context.Context, c *cli.Command, err error, _ bool) error {
	return cli.Exit(describeUsageError(c, err.Error()), exitUsage)
}

// describeUsageError turns one of cli v3's parse error messages into a
// suggestion. Messages it does not know pass through, prefixed with the
// command.
func describeUsageError(c *cli.Command, msg string) string {
	cmd := commandPath(c)
	help := fmt.Sprintf(" (`%s --help` lists the flags)", cmd)
	switch {
	case strings.HasPrefix(msg, "flag provided but not defined: "):
		name := strings.TrimLeft(strings.TrimPrefix(msg, "flag provided but not defined: "), "-")
		out := fmt.Sprintf("%s: there is no flag %s", cmd, dashed(name))
		if f := closestFlag(c, name); f != nil {
			out += fmt.Sprintf("; did you mean %s?", flagExample(f))
		}
		return out + help
	case strings.HasPrefix(msg, "flag needs an argument: "):
		name := strings.TrimLeft(strings.TrimPrefix(msg, "flag needs an argument: "), "-")
		if f := lookupFlag(c, name); f != nil {
			return fmt.Sprintf("%s: %s needs a value, as in %s", cmd, dashed(name), flagExample(f))
		}
		return fmt.Sprintf("%s: %s needs a value", cmd, dashed(name)) + help
	case strings.HasPrefix(msg, "invalid value "):
		// invalid value "x" for flag -port: strconv.ParseInt: ...
		rest := strings.TrimPrefix(msg, "invalid value ")
		val, after, ok := strings.Cut(rest, " for flag ")
		if ok {
			name, _, _ := strings.Cut(after, ":")
			name = strings.TrimLeft(name, "-")
			if f := lookupFlag(c, name); f != nil {
				return fmt.Sprintf("%s: %s is not a valid %s for %s; type it as in %s", cmd, val, kindOf(f), dashed(name), flagExample(f))
			}
		}
	}
	return cmd + ": " + msg + help
}

// dashed is a flag name as typed: -P for one letter, --port otherwise.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func lookupFlag(c *cli.Command, name string) cli.Flag {
	for cc := c; cc != nil; cc = parentOf(cc) {
		for _, f := range cc.Flags {
			for _, n := range f.Names() {
				if n == name {
					return f
				}
			}
		}
	}
	return nil
}

// parentOf is c's parent in the lineage (cli keeps it unexported).
func parentOf(c *cli.Command) *cli.Command {
	l := c.Lineage()
	if len(l) < 2 {
		return nil
	}
	return l[1]
}

// closestFlag is the flag of c (not help) whose name typed may be a
// mistyping of.
func closestFlag(c *cli.Command, typed string) cli.Flag {
	var best cli.Flag
	bestD := -1
	for _, f := range c.Flags {
		if f == cli.HelpFlag || slices.Contains(f.Names(), "help") {
			continue
		}
		for _, n := range f.Names() {
			if d, ok := typo(n, typed); ok && (bestD < 0 || d < bestD) {
				best, bestD = f, d
			}
		}
	}
	return best
}

// flagExample is the flag as one would type it: its name and, when it
// takes a value, its default or a placeholder.
func flagExample(f cli.Flag) string {
	name := dashed(f.Names()[0])
	df, ok := f.(cli.DocGenerationFlag)
	if !ok || !df.TakesValue() {
		return name
	}
	v := df.GetValue()
	if v == "" || v == `""` || v == "0" || v == "0s" {
		v = placeholder(df)
	}
	return name + " " + v
}

func placeholder(f cli.DocGenerationFlag) string {
	// A `NAME` in the usage text is the flag's own placeholder.
	if u := f.GetUsage(); strings.Count(u, "`") >= 2 {
		i := strings.IndexByte(u, '`')
		j := strings.IndexByte(u[i+1:], '`')
		return u[i+1 : i+1+j]
	}
	switch kindOfDoc(f) {
	case "number":
		return "N"
	case "duration":
		return "30s"
	}
	return "VALUE"
}

func kindOf(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return "value"
	}
	return kindOfDoc(df)
}

func kindOfDoc(df cli.DocGenerationFlag) string {
	switch t := df.TypeName(); {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "float"):
		return "number"
	case t == "time.Duration", t == "duration":
		return "duration"
	}
	return "value"
}
