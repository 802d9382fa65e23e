# Sourced by bench.sh (ONLY=pg): the first index of BENCH_TREE (/usr) into
# PostgreSQL beside the same into SQLite, alternating, RUNS rounds: wall
# time, CPU time and peak RSS of dupefs (/usr/bin/time), and the CPU time
# and peak memory of the server (every process of it: the CPU time of its
# processes and of those it reaped, read from /proc before and after a
# run; the sum of their PSS, sampled every 0.1 s, at its largest). The
# server is a private one made for the bench (initdb, a unix socket, no
# TCP), with PostgreSQL's defaults (fsync and synchronous_commit on, as a
# user's); it shares the machine's CPUs with dupefs. Needs PostgreSQL's
# programs (Debian: apt-get install postgresql); says so otherwise.

pg_bin() { # pg_bin NAME: a PostgreSQL program, on PATH or in Debian's folder
	command -v "$1" 2>/dev/null && return
	ls /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | tail -n1
}

# pg_cpu PID: CPU ticks of the server: the postmaster, what it reaped, and
# the processes it runs now.
pg_cpu() {
	local pm=$1 t=0 c
	t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat")
	for c in $(pgrep -P "$pm"); do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# pg_pss PID: the PSS (kB) of the postmaster and its processes, summed.
pg_pss() {
	local pm=$1 p s=0
	for p in "$pm" $(pgrep -P "$pm"); do
		s=$((s + $(awk '/^Pss:/{print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)))
	done
	echo "$s"
}

bench_pg() {
	local initdb pgserver createdb dropdb
	initdb=$(pg_bin initdb) pgserver=$(pg_bin postgres) createdb=$(pg_bin createdb) dropdb=$(pg_bin dropdb)
	if [ -z "$initdb" ] || [ -z "$pgserver" ] || [ -z "$createdb" ] || [ -z "$dropdb" ]; then
		echo "pg bench: PostgreSQL's programs are not installed (Debian: apt-get install postgresql): skipped" | tee -a "$RESULTS"
		return
	fi
	local T=${REAL:-/usr}
	# initdb and the server refuse root: as root they run as postgres.
	local as=()
	[ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
	# A short folder: the socket's path must fit in 107 bytes.
	local dir
	dir=$(mktemp -d /tmp/dupefs-pgbench-XXXXXX)
	[ "$(id -u)" = 0 ] && chown postgres: "$dir"
	"${as[@]}" "$initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --locale=C >/dev/null
	"${as[@]}" "$pgserver" -D "$dir/data" -k "$dir" -c listen_addresses= >"$dir/log" 2>&1 &
	local started=$!
	# Never leave the server behind, even when a run fails.
	trap 'kill -INT $(head -n1 "'"$dir"'/data/postmaster.pid" 2>/dev/null) 2>/dev/null; wait '"$started"' 2>/dev/null; rm -rf "'"$dir"'"' EXIT
	local url="postgres://postgres@/bench?host=$dir&sslmode=disable"
	local i
	for ((i = 0; i < 600; i++)); do
		"${as[@]}" "$createdb" -h "$dir" -U postgres bench 2>/dev/null && break
		sleep 0.1
	done
	# The postmaster (runuser, when there is one, is its parent).
	local pid
	pid=$(head -n1 "$dir/data/postmaster.pid")
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
				"${as[@]}" "$dropdb" -h "$dir" -U postgres --if-exists bench
				"${as[@]}" "$createdb" -h "$dir" -U postgres bench
				local before peak=0 sampler
				before=$(pg_cpu "$pid")
				( while :; do pg_pss "$pid"; sleep 0.1; done ) >"$WORK/pg.pss" &
				sampler=$!
				timed "$label" "$BIN" --db "$url" index "$T"
				kill "$sampler"; wait "$sampler" 2>/dev/null || true
				peak=$(sort -n "$WORK/pg.pss" | tail -n1)
				((r > 0)) && echo "$(( $(pg_cpu "$pid") - before )) $peak" >>"$WORK/t.pg.server" ;;
			esac
		done
		echo "   pg round $r/$RUNS done" >&2
	done
	kill -INT "$pid"; wait "$started" 2>/dev/null || true
	rm -rf "$dir"
	trap - EXIT
	local hz ms mp
	hz=$(getconf CLK_TCK)
	ms=$("$TOOL" median $(col 1 "$WORK/t.pg.sqlite"))
	mp=$("$TOOL" median $(col 1 "$WORK/t.pg.postgres"))
	{
		echo
		echo "### first index into PostgreSQL beside SQLite: $T ($(find "$T" -xdev -type f 2>/dev/null | wc -l) files)"
		echo
		echo "PostgreSQL $("$pgserver" --version | awk '{print $3}'), a private server with its defaults on the same $(nproc) CPUs; warm cache; $RUNS runs each, alternating; medians."
		echo
		echo "| engine | median s | × SQLite | dupefs CPU s (user+sys) | dupefs peak RSS MB | server CPU s | server peak PSS MB | runs (s) |"
		echo "|---|---|---|---|---|---|---|---|"
		for engine in sqlite postgres; do
			local f=$WORK/t.pg.$engine m cpu rss scpu="-" spss="-"
			m=$("$TOOL" median $(col 1 "$f"))
			cpu=$("$TOOL" median $(awk '{print $3 + $4}' "$f"))
			rss=$(col 2 "$f" | tr ' ' '\n' | grep . | sort -n | tail -n1)
			if [ "$engine" = postgres ]; then
				scpu=$(awk -v hz="$hz" '{print $1 / hz}' "$WORK/t.pg.server" | sort -n | awk '{a[NR]=$1} END{printf "%.2f", a[int((NR+1)/2)]}')
				spss=$(awk '{print $2}' "$WORK/t.pg.server" | sort -n | tail -n1 | awk '{printf "%.1f", $1/1024}')
			fi
			printf '| %s | %.3f | %.2f | %.2f | %.1f | %s | %s | %s |\n' "$engine" "$m" "$(awk -v a="$m" -v b="$ms" 'BEGIN{print a/b}')" \
				"$cpu" "$(awk -v k="$rss" 'BEGIN{print k/1024}')" "$scpu" "$spss" "$(col 1 "$f")"
		done
	} | tee -a "$RESULTS"
	target "first index of $T into PostgreSQL, × SQLite" "$(awk -v a="$mp" -v b="$ms" 'BEGIN{printf "%.2f", a/b}')" 1.5
}
bench_pg
