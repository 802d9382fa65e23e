# Sourced by bench-pg.sh: two hosts (two processes with their own --host
# and DUPEFS_MACHINE_ID) index a tree each into one fresh PostgreSQL
# database at once, against the same two one after the other into
# another, then both again, once each: what one host's scan pairs with
# another's files, that host hashes at its next index. RUNS rounds, the
# two ways taking turns at going first. After each round the two
# databases must give the same groups (groups --format json, as the first
# host sees them, sorted), and neither may have files waiting to be
# hashed: otherwise the bench says FAILED, keeps the difference
# ($WORK/ph.diff.ROUND), goes on and exits 1 at its end.

# pg_hosts_trees: the two hosts' trees, one a line: PG_HOSTS, or
# BENCH_TREE's lib and share, or the generated tree's two halves (its
# first and last top folders, hard-linked into two folders, made once).
pg_hosts_trees() {
	if [ -n "${PG_HOSTS:-}" ]; then
		printf '%s\n' $PG_HOSTS
		return
	fi
	if [ -n "$REAL" ] && [ -d "$REAL/lib" ] && [ -d "$REAL/share" ]; then
		printf '%s\n' "$REAL/lib" "$REAL/share"
		return
	fi
	local src dir=$WORK/halves-$FILES
	src=$(tree "gen-$FILES" "$FILES" 8192)
	if [ ! -f "$dir.done" ]; then
		rm -rf "$dir"
		mkdir -p "$dir/a" "$dir/b"
		local tops=("$src"/*) i
		for ((i = 0; i < ${#tops[@]}; i++)); do
			if ((i < ${#tops[@]} / 2)); then cp -al "${tops[i]}" "$dir/a/"; else cp -al "${tops[i]}" "$dir/b/"; fi
		done
		touch "$dir.done"
	fi
	printf '%s\n' "$dir/a" "$dir/b"
}

# pg_host_start LABEL DB HOST TREE: host HOST indexes TREE into DB in the
# background, under /usr/bin/time (to $WORK/time.LABEL); sets PG_JOB.
pg_host_start() {
	DUPEFS_MACHINE_ID=machine-$3 /usr/bin/time -f "%e %M %U %S" -o "$WORK/time.$1" \
		"$BIN" --db "$(pg_url "$2")" --host "$3" index "$4" >/dev/null 2>"$WORK/stderr.$1" &
	PG_JOB=$!
	PG_PIDS+=("$PG_JOB")
}

# pg_host_wait LABEL PID: waits for pg_host_start's job; fails the bench,
# with its errors, if it failed.
pg_host_wait() {
	local rc=0
	wait "$2" || rc=$?
	pg_ended "$2"
	if [ "$rc" != 0 ]; then
		echo "pg bench: $1 failed (exit $rc):" >&2
		cat "$WORK/stderr.$1" >&2
		exit 1
	fi
}

# pg_hosts_groups DB: the groups in DB as host a sees them, sorted.
pg_hosts_groups() {
	DUPEFS_MACHINE_ID=machine-hosta "$BIN" --db "$(pg_url "$1")" --host hosta groups --format json |
		jq -S '[.groups[] | .files |= sort] | sort_by(.file_hash, .files)'
}

pg_way() { if [ "$1" = once ]; then echo "at once"; else echo "one after the other"; fi; }

# pg_hosts_round WAY A B [memory]: both hosts index, at once (WAY once)
# or one after the other and then each again (seq), into a fresh database
# of their own; appends "wall maxrss_kb 0 cpu" to $WORK/t.ph.WAY, each
# process's to $WORK/t.ph.WAY.STEP and the server's to
# $WORK/t.ph.WAY.server; with memory, the server's memory is sampled
# (pg_watch) and every figure goes to files of WAY.memory instead.
pg_hosts_round() {
	local way=$1 a=$2 b=$3 s e pa pb
	pg_fresh "hosts_$way"
	if [ "${4:-}" = memory ]; then
		pg_watch pss
		way=$way.memory
	else
		pg_watch
	fi
	s=$(date +%s.%N)
	if [ "$1" = once ]; then
		pg_host_start "$way.a" "hosts_$1" hosta "$a"
		pa=$PG_JOB
		pg_host_start "$way.b" "hosts_$1" hostb "$b"
		pb=$PG_JOB
		pg_host_wait "$way.a" "$pa"
		pg_host_wait "$way.b" "$pb"
	else
		local p
		for p in a b a2 b2; do
			if [ "${p:0:1}" = a ]; then
				pg_host_start "$way.$p" "hosts_$1" hosta "$a"
			else
				pg_host_start "$way.$p" "hosts_$1" hostb "$b"
			fi
			pg_host_wait "$way.$p" "$PG_JOB"
		done
	fi
	e=$(date +%s.%N)
	pg_watched "$WORK/t.ph.$way.server"
	local p runs=()
	for p in a b a2 b2; do
		[ "$1" = once ] && [ "${#p}" = 2 ] && continue
		runs+=("$(tail -n1 "$WORK/time.$way.$p")")
		echo "${runs[-1]}" >>"$WORK/t.ph.$way.$p"
	done
	# The wall of the whole, the largest peak, the CPU of every process
	# (as user 0, system the sum, so pg_stats adds them).
	printf '%s\n' "${runs[@]}" | awk -v s="$s" -v e="$e" '{c += $3 + $4; if ($2 > m) m = $2}
		END{printf "%.3f %d 0 %.2f\n", e - s, m, c}' >>"$WORK/t.ph.$way"
}

bench_pg_hosts() {
	if ! command -v jq >/dev/null; then
		echo "pg bench: two hosts at once need jq (to compare the groups): skipped" | tee -a "$RESULTS"
		return
	fi
	local trees a b
	mapfile -t trees < <(pg_hosts_trees)
	a=${trees[0]} b=${trees[1]}
	rm -f "$WORK"/t.ph.*
	# The trees' data in the page cache, as for the other warm runs.
	find "$a" "$b" -xdev -type f -print0 2>/dev/null | xargs -0 cat >/dev/null 2>&1 || true
	local r way
	rm -f "$WORK"/ph.*
	for ((r = 0; r < RUNS; r++)); do
		local order=(once seq)
		((r % 2)) && order=(seq once)
		for way in "${order[@]}"; do pg_hosts_round "$way" "$a" "$b"; done
		for way in once seq; do
			pg_hosts_groups "hosts_$way" >"$WORK/ph.$way.json" 2>"$WORK/ph.$way.err"
			echo "$(jq length "$WORK/ph.$way.json")" >>"$WORK/ph.$way.groups"
			if [ -s "$WORK/ph.$way.err" ]; then
				failed "two hosts $(pg_way "$way"), round $((r + 1)): the index is not finished: $(tr '\n' ' ' <"$WORK/ph.$way.err")"
			fi
		done
		if ! cmp -s "$WORK/ph.once.json" "$WORK/ph.seq.json"; then
			diff "$WORK/ph.seq.json" "$WORK/ph.once.json" >"$WORK/ph.diff.$((r + 1))" || true
			failed "two hosts at once and one after the other give different groups, round $((r + 1)): $(jq length "$WORK/ph.once.json") groups at once, $(jq length "$WORK/ph.seq.json") one after the other ($WORK/ph.diff.$((r + 1)): < only one after the other, > only at once)"
			head -n 40 "$WORK/ph.diff.$((r + 1))" >&2
		fi
		echo "   pg hosts round $((r + 1))/$RUNS done" >&2
	done
	for way in once seq; do pg_hosts_round "$way" "$a" "$b" memory; done
	local mo ms
	mo=$("$TOOL" median $(col 1 "$WORK/t.ph.once"))
	ms=$("$TOOL" median $(col 1 "$WORK/t.ph.seq"))
	{
		echo
		echo "### two hosts at once against one after the other: $a and $b"
		echo
		echo "hosta indexes $a ($(find "$a" -xdev -type f 2>/dev/null | wc -l) files), hostb $b ($(find "$b" -xdev -type f 2>/dev/null | wc -l) files), each into a fresh database of the same server; one after the other is hosta, hostb, then each again; $RUNS runs each way, alternating; medians; the server's peak PSS is of one more round each way, sampled (the timed ones are not). Groups at the end of each round: at once $(col 1 "$WORK/ph.once.groups"); one after the other $(col 1 "$WORK/ph.seq.groups")."
		echo
		echo "| way | median s | × one after the other | dupefs CPU s (both) | dupefs peak RSS MB | server CPU s | server peak PSS MB | CPUs busy (CPU s / s) | runs (s) |"
		echo "|---|---|---|---|---|---|---|---|---|"
		local way m cpu rss scpu spss
		for way in once seq; do
			read -r m cpu rss <<<"$(pg_stats "$WORK/t.ph.$way")"
			read -r scpu spss <<<"$(pg_server_stats "$WORK/t.ph.$way.server" "$WORK/t.ph.$way.memory.server")"
			printf '| %s | %.3f | %.2f | %.2f | %s | %.2f | %s | %.2f | %s |\n' \
				"$(pg_way "$way")" "$m" \
				"$(awk -v a="$m" -v b="$ms" 'BEGIN{print a/b}')" "$cpu" "$rss" "$scpu" "$spss" \
				"$(awk -v c="$cpu" -v s="$scpu" -v m="$m" 'BEGIN{print (c + s) / m}')" "$(col 1 "$WORK/t.ph.$way")"
		done
		local p name
		for p in once.a once.b seq.a seq.b seq.a2 seq.b2; do
			case $p in
			once.a) name="at once: hosta's index" ;;
			once.b) name="at once: hostb's index" ;;
			seq.a) name="one after the other: hosta's index" ;;
			seq.b) name="then hostb's" ;;
			seq.a2) name="then hosta's again" ;;
			seq.b2) name="then hostb's again" ;;
			esac
			read -r m cpu rss <<<"$(pg_stats "$WORK/t.ph.$p")"
			printf '| %s | %.3f | | %.2f | %s | | | | %s |\n' "$name" "$m" "$cpu" "$rss" "$(col 1 "$WORK/t.ph.$p")"
		done
	} | tee -a "$RESULTS"
	target "two hosts into PostgreSQL at once × one after the other" "$(awk -v a="$mo" -v b="$ms" 'BEGIN{printf "%.2f", a/b}')" 0.8
}
