package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves the flags a user typed after a command's arguments in
// front of them: urfave/cli v2 stops reading flags at the first argument,
// but the usage lines (and the README) put flags after the paths, as in
// `root add PATH... --exclude GLOB`, and users type
// `dupefs mount /mnt/dupes ~/Pictures --allow-other`. As with GNU getopt,
// every argument starting with '-' is taken for a flag (an unknown one is
// then reported as such); "--" ends the flags, so `check -- -file` works.
// The command's own flag definitions say which flags take a value. Global
// flags (--db, --cache-dir) typed after the command move before it.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	i := 1
	// Global flags, then the command path.
	cmds := app.Commands
	flags := app.Flags
	var cmd *cli.Command
	cmdAt := 0 // where the command path starts in out
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			out = append(out, a)
			if takesValue(flags, a) && !strings.Contains(a, "=") && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			i++
			continue
		}
		next := findCommand(cmds, a)
		if next == nil {
			break
		}
		if cmd == nil {
			cmdAt = len(out)
		}
		out = append(out, a)
		i++
		cmd, cmds, flags = next, next.Subcommands, next.Flags
		if len(cmds) == 0 {
			break
		}
	}
	if cmd == nil {
		return args
	}
	var globals, front, rest []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			to, defs := &front, flags
			if lookupFlag(flags, a) == nil && lookupFlag(app.Flags, a) != nil {
				to, defs = &globals, app.Flags
			}
			*to = append(*to, a)
			if takesValue(defs, a) && !strings.Contains(a, "=") && i+1 < len(args) {
				*to = append(*to, args[i+1])
				i++
			}
			continue
		}
		rest = append(rest, a)
	}
	out = append(append(append([]string{}, out[:cmdAt]...), globals...), out[cmdAt:]...)
	out = append(out, front...)
	return append(out, rest...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// flagName strips dashes and any =value.
func flagName(arg string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name
}

func lookupFlag(flags []cli.Flag, arg string) cli.Flag {
	name := flagName(arg)
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// takesValue reports whether a flag reads the next argument as its value.
func takesValue(flags []cli.Flag, arg string) bool {
	f := lookupFlag(flags, arg)
	if f == nil {
		return false
	}
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}
