# Sourced by bench.sh (ONLY=pg): PostgreSQL as the index, on a private
# server made for the bench (initdb, a unix socket, no TCP) with
# PostgreSQL's defaults (fsync and synchronous_commit on, as a user's); it
# shares the machine's CPUs with dupefs. Needs PostgreSQL's programs
# (Debian: apt-get install postgresql); says so otherwise. Parts, in turn:
#  - the first index of BENCH_TREE (/usr) into PostgreSQL beside the same
#    into SQLite, alternating, RUNS rounds (here);
#  - two hosts indexing a tree each at once against the same two one after
#    the other (pg-hosts.sh);
#  - the view's latency for another host's commit, and find over
#    PG_GROUPS groups through the view, beside SQLite (pg-view.sh).
# Each gives wall time, CPU time and peak RSS of dupefs (/usr/bin/time),
# and the CPU time and peak memory of the server (every process of it: the
# CPU time of its processes and of those it reaped, read from /proc before
# and after; the sum of their PSS, sampled every 0.1 s, at its largest).
# The server, the mounts and the processes the parts start are ended, and
# their folders removed, on any exit (pg_cleanup).
#
# Knobs, besides bench.sh's:
#   PG_HOSTS="A B"     the two hosts' trees (default: BENCH_TREE's lib and
#                      share; without BENCH_TREE, the generated tree's two
#                      halves, hard-linked into two folders)
#   PG_COMMITS=10      another host's commits timed per round (pg-view.sh)
#   PG_GROUPS=100000   groups (of 2 copies) the find walks (pg-view.sh)
PG_COMMITS=${PG_COMMITS:-10}
PG_GROUPS=${PG_GROUPS:-100000}

pg_bin() { # pg_bin NAME: a PostgreSQL program, on PATH or in Debian's folder
	command -v "$1" 2>/dev/null && return
	ls /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | tail -n1
}

# pg_cpu PID: CPU ticks of the server: the postmaster, what it reaped, and
# the processes it runs now.
pg_cpu() {
	local pm=$1 t=0 c v
	t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat")
	for c in $(pgrep -P "$pm"); do
		v=$(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || true)
		t=$((t + ${v:-0}))
	done
	echo "$t"
}

# pg_ticks PID: CPU ticks (user+system) of a process.
pg_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# pg_pss PID: the PSS (kB) of the postmaster and its processes, summed.
pg_pss() {
	local pm=$1 p s=0 v
	for p in "$pm" $(pgrep -P "$pm"); do
		v=$(awk '/^Pss:/{print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || true)
		s=$((s + ${v:-0}))
	done
	echo "$s"
}

# What the parts started, for pg_cleanup: processes, mount points (folders
# it removes once unmounted), folders, and the server (PG_SERVER: the job
# that runs it; PG_DIR: its folder).
PG_PIDS=()
PG_MOUNTS=()
PG_DIRS=()
PG_SERVER=
PG_DIR=

# pg_ended PID: PID ended (and was waited for): pg_cleanup leaves it alone.
pg_ended() {
	local p keep=()
	for p in "${PG_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	PG_PIDS=("${keep[@]}")
}

# pg_mounted DIR: something is mounted at DIR (a FUSE mount whose process
# died too, which stat cannot tell).
pg_mounted() { awk -v m="$1" '$2 == m {found = 1} END{exit !found}' /proc/self/mounts; }

# pg_cleanup: ends every process and mount the parts started, stops the
# server and removes their folders; it runs on any exit.
pg_cleanup() {
	local p m pm
	# Children first: /usr/bin/time does not pass a signal on.
	for p in "${PG_PIDS[@]}"; do
		pkill -TERM -P "$p" 2>/dev/null || true
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${PG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	for m in "${PG_MOUNTS[@]}"; do
		if pg_mounted "$m"; then
			umount "$m" 2>/dev/null || fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		fi
		rmdir "$m" 2>/dev/null || true
	done
	if [ -n "$PG_SERVER" ]; then
		# A fast shutdown; the job itself when the server never said its
		# pid (runuser passes the signal on).
		pm=$(head -n1 "$PG_DIR/data/postmaster.pid" 2>/dev/null || true)
		if [ -n "$pm" ]; then kill -INT "$pm" 2>/dev/null || true; else kill -TERM "$PG_SERVER" 2>/dev/null || true; fi
		wait "$PG_SERVER" 2>/dev/null || true
	fi
	for m in "${PG_DIRS[@]}"; do rm -rf "$m"; done
	PG_PIDS=() PG_MOUNTS=() PG_DIRS=() PG_SERVER=
}

# pg_start: initdb and the server in a new folder; sets PG_PM (the
# postmaster) and PG_AS (how to run its programs). Fails, having printed
# the server's log, when it does not come up within 60 s.
pg_start() {
	# initdb and the server refuse root: as root they run as postgres.
	PG_AS=()
	[ "$(id -u)" = 0 ] && PG_AS=(runuser -u postgres --)
	# A short folder: the socket's path must fit in 107 bytes.
	PG_DIR=$(mktemp -d /tmp/dupefs-pgbench-XXXXXX)
	PG_DIRS+=("$PG_DIR")
	[ "$(id -u)" = 0 ] && chown postgres: "$PG_DIR"
	"${PG_AS[@]}" "$PG_INITDB" -D "$PG_DIR/data" -A trust -U postgres -E UTF8 --locale=C >"$PG_DIR/initdb.log" 2>&1 || {
		echo "pg bench: initdb failed:" >&2; cat "$PG_DIR/initdb.log" >&2; exit 1; }
	"${PG_AS[@]}" "$PG_SERVER_BIN" -D "$PG_DIR/data" -k "$PG_DIR" -c listen_addresses= >"$PG_DIR/log" 2>&1 &
	PG_SERVER=$!
	local i
	for ((i = 0; i < 600; i++)); do
		"${PG_AS[@]}" "$PG_CREATEDB" -h "$PG_DIR" -U postgres bench 2>/dev/null && break
		kill -0 "$PG_SERVER" 2>/dev/null || break
		sleep 0.1
	done
	# The postmaster (runuser, when there is one, is its parent).
	PG_PM=$(head -n1 "$PG_DIR/data/postmaster.pid" 2>/dev/null || true)
	if ! kill -0 "$PG_SERVER" 2>/dev/null || [ -z "$PG_PM" ] || ! "${PG_AS[@]}" "$PG_PSQL" -h "$PG_DIR" -U postgres -d bench -Atc 'select 1' >/dev/null 2>&1; then
		echo "pg bench: the server did not start:" >&2
		cat "$PG_DIR/log" >&2
		exit 1
	fi
}

pg_url() { echo "postgres://postgres@/$1?host=$PG_DIR&sslmode=disable"; }

# pg_fresh DB: an empty database DB.
pg_fresh() {
	PGOPTIONS='-c client_min_messages=warning' "${PG_AS[@]}" "$PG_DROPDB" -h "$PG_DIR" -U postgres --if-exists "$1"
	"${PG_AS[@]}" "$PG_CREATEDB" -h "$PG_DIR" -U postgres "$1"
}

# pg_settle [N]: waits (5 s at most) until no process of the server is
# ending (a zombie) and, with N, until it runs N processes at most; prints
# how many it runs. A backend's CPU time moves to the postmaster's when it
# is reaped: pg_cpu read while one ends could miss it.
pg_settle() {
	local i n z c
	for ((i = 0; i < 100; i++)); do
		n=0 z=0
		for c in $(pgrep -P "$PG_PM"); do
			n=$((n + 1))
			[ "$(awk '{print $3}' "/proc/$c/stat" 2>/dev/null || echo Z)" = Z ] && z=$((z + 1))
		done
		if [ "$z" = 0 ] && { [ -z "${1:-}" ] || [ "$n" -le "$1" ]; }; then break; fi
		sleep 0.05
	done
	echo "$n"
}

# pg_watch [pss] / pg_watched FILE: the server's CPU ticks between the
# two, and with pss its peak PSS (kB, else 0), appended to FILE as "ticks
# peak_kb"; pg_watched waits for the backends of the processes that ended
# meanwhile to end too. The PSS is sampled every 0.1 s, which costs the
# machine a third of a CPU (pgrep, awk and smaps_rollup of every process
# of the server: a first index of /usr into PostgreSQL took 9.2-9.6 s
# sampled, 6.6-7.3 s not), so the runs that are timed are not sampled:
# each part samples a run of its own for the memory.
pg_watch() {
	PG_WATCH_N=$(pg_settle)
	PG_WATCH_CPU=$(pg_cpu "$PG_PM")
	: >"$WORK/pg.pss"
	PG_WATCH_PID=
	[ "${1:-}" = pss ] || return 0
	(while :; do pg_pss "$PG_PM"; sleep 0.1; done) >"$WORK/pg.pss" &
	PG_WATCH_PID=$!
	PG_PIDS+=("$PG_WATCH_PID")
}
pg_watched() {
	if [ -n "$PG_WATCH_PID" ]; then
		kill "$PG_WATCH_PID" 2>/dev/null || true
		wait "$PG_WATCH_PID" 2>/dev/null || true
		pg_ended "$PG_WATCH_PID"
	fi
	pg_settle "$PG_WATCH_N" >/dev/null
	echo "$(($(pg_cpu "$PG_PM") - PG_WATCH_CPU)) $( (echo 0; cat "$WORK/pg.pss") | sort -n | tail -n1)" >>"$1"
}

# pg_stats FILE: from lines "wall maxrss_kb user sys" (/usr/bin/time),
# "median_wall median_cpu peak_rss_mb".
pg_stats() {
	printf '%s %s %s\n' "$("$TOOL" median $(col 1 "$1"))" "$("$TOOL" median $(awk '{print $3 + $4}' "$1"))" \
		"$(col 2 "$1" | tr ' ' '\n' | grep . | sort -n | tail -n1 | awk '{printf "%.1f", $1/1024}')"
}

# pg_server_stats FILE MEMFILE: from lines "ticks peak_kb" (pg_watched),
# "median CPU s" of FILE's and "peak PSS MB" of MEMFILE's (the sampled
# runs).
pg_server_stats() {
	local hz
	hz=$(getconf CLK_TCK)
	printf '%s %s\n' "$("$TOOL" median $(awk -v hz="$hz" '{print $1 / hz}' "$1"))" \
		"$(awk '{print $2}' "$2" | sort -n | tail -n1 | awk '{printf "%.1f", $1/1024}')"
}

# bench_pg_first: the first index of BENCH_TREE into PostgreSQL beside
# SQLite.
bench_pg_first() {
	local T=$1 url
	url=$(pg_url bench)
	rm -f "$WORK"/t.pg.*
	local r engine
	for ((r = 0; r <= RUNS; r++)); do
		# Round 0 warms the cache and is not counted; then the engines
		# take turns at going first.
		local order=(sqlite postgres)
		((r % 2 == 0)) && order=(postgres sqlite)
		for engine in "${order[@]}"; do
			local label=pg.$engine
			((r == 0)) && label=pg.warmup
			case $engine in
			sqlite)
				rm -f "$WORK"/pgbench.db*
				timed "$label" "$BIN" --db "$WORK/pgbench.db" index "$T" ;;
			postgres)
				pg_fresh bench
				pg_watch
				timed "$label" "$BIN" --db "$url" index "$T"
				pg_watched "$WORK/t.pg.server.all"
				((r > 0)) && tail -n1 "$WORK/t.pg.server.all" >>"$WORK/t.pg.server" ;;
			esac
		done
		echo "   pg round $r/$RUNS done" >&2
	done
	# The server's memory, in a run of its own (pg_watch).
	pg_fresh bench
	pg_watch pss
	timed pg.memory "$BIN" --db "$url" index "$T"
	pg_watched "$WORK/t.pg.server.memory"
	local ms mp
	ms=$("$TOOL" median $(col 1 "$WORK/t.pg.sqlite"))
	mp=$("$TOOL" median $(col 1 "$WORK/t.pg.postgres"))
	{
		echo
		echo "### first index into PostgreSQL beside SQLite: $T ($(find "$T" -xdev -type f 2>/dev/null | wc -l) files)"
		echo
		echo "PostgreSQL $("$PG_SERVER_BIN" --version | awk '{print $3}'), a private server with its defaults on the same $(nproc) CPUs; warm cache; $RUNS runs each, alternating; medians. The server's peak PSS is of one more run, sampled every 0.1 s (the timed runs are not: sampling costs a third of a CPU)."
		echo
		echo "| engine | median s | × SQLite | dupefs CPU s (user+sys) | dupefs peak RSS MB | server CPU s | server peak PSS MB | runs (s) |"
		echo "|---|---|---|---|---|---|---|---|"
		for engine in sqlite postgres; do
			local f=$WORK/t.pg.$engine m cpu rss scpu="-" spss="-"
			read -r m cpu rss <<<"$(pg_stats "$f")"
			[ "$engine" = postgres ] && read -r scpu spss <<<"$(pg_server_stats "$WORK/t.pg.server" "$WORK/t.pg.server.memory")"
			printf '| %s | %.3f | %.2f | %.2f | %s | %s | %s | %s |\n' "$engine" "$m" "$(awk -v a="$m" -v b="$ms" 'BEGIN{print a/b}')" \
				"$cpu" "$rss" "$scpu" "$spss" "$(col 1 "$f")"
		done
	} | tee -a "$RESULTS"
	target "first index of $T into PostgreSQL, × SQLite" "$(awk -v a="$mp" -v b="$ms" 'BEGIN{printf "%.2f", a/b}')" 1.5
}

bench_pg() {
	PG_INITDB=$(pg_bin initdb) PG_SERVER_BIN=$(pg_bin postgres) PG_CREATEDB=$(pg_bin createdb)
	PG_DROPDB=$(pg_bin dropdb) PG_PSQL=$(pg_bin psql)
	if [ -z "$PG_INITDB" ] || [ -z "$PG_SERVER_BIN" ] || [ -z "$PG_CREATEDB" ] || [ -z "$PG_DROPDB" ] || [ -z "$PG_PSQL" ]; then
		echo "pg bench: PostgreSQL's programs are not installed (Debian: apt-get install postgresql): skipped" | tee -a "$RESULTS"
		return
	fi
	# Never leave the server, a mount or a process behind, even when a
	# run fails or is interrupted.
	trap pg_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP
	pg_start
	local T=${REAL:-/usr}
	bench_pg_first "$T"
	. "$ROOT/integration/bench/pg-hosts.sh"
	bench_pg_hosts
	. "$ROOT/integration/bench/pg-view.sh"
	bench_pg_latency
	bench_pg_find
	pg_cleanup
	trap - EXIT INT TERM HUP
}
bench_pg
