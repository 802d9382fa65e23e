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
	return page + manExtra, nil
}

const manDescription = `dupefs indexes the files under the folders you choose (its roots) into one
SQLite file, finds the files with the same content, reports them in the formats
of fclones and fdupes, finds duplicate folders, acts on duplicates through a
ledger that makes every action exactly-once and undoable, and mounts a
read-only view of the duplicates that follows the disk.`

const manExtra = `.SH EXIT STATUS
.TP
0
success
.TP
1
check: some FILE (or a file under DIR) is new
.TP
2
any other error; for dedupe, link and remove, some action failed
.TP
3
bad flags or arguments
.TP
4
a root or PATH is missing or not a folder
.TP
5
the index is absent, unreadable, corrupt or from a newer dupefs
.TP
6
the disk holding the index is full
.TP
7
the mount point is unusable, or mounting or unmounting failed
.TP
8
folders: the index is still being built
.TP
130
stopped by SIGINT or SIGTERM
.SH FILES
.TP
$XDG_STATE_HOME/dupefs/index.db
the index (~/.local/state/dupefs/index.db)
.TP
$XDG_CACHE_HOME/dupefs/thumbs
the thumbnail cache
.TP
$XDG_CONFIG_HOME/dupefs/mount.conf, $XDG_CONFIG_HOME/dupefs/INSTANCE.conf
DUPEFS_ROOTS and DUPEFS_FLAGS for the user unit dupefs-mount@INSTANCE.service
.TP
/etc/dupefs/mount.conf, /etc/dupefs/INSTANCE.conf
the same for the system unit
.SH ENVIRONMENT
.TP
GOMAXPROCS
how many goroutines run at once; unset, as many as the CPUs, and twice as
many while a scan waits on a cold disk (set, dupefs keeps it as it is)
.TP
XDG_STATE_HOME, XDG_CACHE_HOME, XDG_CONFIG_HOME
where the index, the thumbnail cache and the mount settings are (see FILES)
.SH FSTAB
A line such as
.PP
.nf
/usr/bin/dupefs#/home/u/Pictures:/srv/photos /mnt/dupes fuse ro,noauto,x-systemd.automount,db=/var/lib/dupefs/index.db 0 0
.fi
.PP
mounts the view with mount(8) (through mount.fuse of fuse3; type fuse.dupefs
finds dupefs on PATH). The source holds the roots, separated by ':' (none: the
index's roots as they are; a root holding ':' goes in a root= option). Options:
db=, cache-dir=, log= (default: dupefs-mount.log beside the index), root=,
allow_other, no-index, no-watch, no-thumbs, serve=links|files, hash=, workers=,
io-depth=, rotational=, rescan-every=, max-hashes-per-sec=, max-bytes-per-sec=; ro, dev, suid, auto,
noauto, user, nofail, defaults, _netdev, the atime options and x-* are ignored
(the view is always ro,nosuid,nodev; rw is ignored with a warning). dupefs
returns once the view answers and serves it in the background until umount.
.SH SEE ALSO
fusermount3(1), mount.fuse3(8), systemd.service(5), fclones(1), fdupes(1), rmlint(1)
`

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
