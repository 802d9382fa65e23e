package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// docsCommand writes the man page and the shell completions, made from the
// command definitions (make install and make deb run it).
func docsCommand() *cli.Command {
	return &cli.Command{
		Name:      "docs",
		Usage:     "write the man page (man) or a shell completion (bash, zsh, fish) to stdout",
		ArgsUsage: "man|bash|zsh|fish",
		Hidden:    true,
		Action: func(c *cli.Context) error {
			return runDocs(c.App, c.Args().First(), c.App.Writer)
		},
	}
}

func runDocs(app *cli.App, what string, w io.Writer) error {
	switch what {
	case "man":
		page, err := manPage(app)
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, page)
		return err
	case "bash":
		_, err := io.WriteString(w, bashCompletion(app))
		return err
	case "zsh":
		// zsh runs the bash completion through bashcompinit.
		_, err := io.WriteString(w, "#compdef dupefs\nautoload -U +X bashcompinit && bashcompinit\n"+bashCompletion(app))
		return err
	case "fish":
		s, err := app.ToFishCompletion()
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, s)
		return err
	}
	return usageErrorf("docs %q: want man, bash, zsh or fish", what)
}

// manPage is dupefs(1): urfave/cli's page, with the sections a user looks
// for added: exit status, files, fstab, environment.
func manPage(app *cli.App) (string, error) {
	saved := app.Description
	app.Description = manDescription
	defer func() { app.Description = saved }()
	page, err := app.ToManWithSection(1)
	if err != nil {
		return "", err
	}
	return manFinish(app, page), nil
}

// bashCompletion completes commands, their flags, and file names.
func bashCompletion(app *cli.App) string {
	var b strings.Builder
	var names []string
	for _, c := range app.Commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	sort.Strings(names)
	flagsOf := func(fs []cli.Flag) string {
		var out []string
		for _, f := range fs {
			if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
				continue
			}
			for _, n := range f.Names() {
				if len(n) == 1 {
					out = append(out, "-"+n)
				} else {
					out = append(out, "--"+n)
				}
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	fmt.Fprintf(&b, `# bash completion for dupefs (made by dupefs docs bash)
_dupefs() {
    local cur cmd i
    cur="${COMP_WORDS[COMP_CWORD]}"
    cmd=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
        -*) ;;
        *) cmd="${COMP_WORDS[i]}"; break ;;
        esac
    done
    local global="%s"
    local opts=""
    case "$cmd" in
    "") COMPREPLY=($(compgen -W "%s $global" -- "$cur")); return ;;
`, flagsOf(app.Flags), strings.Join(names, " "))
	for _, c := range app.Commands {
		if c.Hidden {
			continue
		}
		sub := ""
		for _, s := range c.Subcommands {
			if !s.Hidden {
				sub += " " + s.Name
			}
		}
		fmt.Fprintf(&b, "    %s) opts=%q ;;\n", c.Name, strings.TrimSpace(flagsOf(c.Flags)+sub))
	}
	b.WriteString(`    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts $global" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$opts" -- "$cur") $(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _dupefs dupefs
`)
	return b.String()
}
