# Sourced by bench-pg.sh: the view over PostgreSQL beside the view over
# SQLite, each mounted with --no-index (it only serves the index) at a
# folder under /var/tmp (the FUSE tests detach dupefs mounts under /tmp):
#  - the latency of another host's commit: the mount is host a's; host b
#    (on SQLite: another process on the same file) indexes, PG_COMMITS
#    times a round, a small tree that gains a copy of a file a holds; the
#    time from b's process exit to the new group's folder in the mount's
#    /by-hash, listed every 10 ms (benchtool appear);
#  - find over PG_GROUPS groups (of 2 copies): find MOUNT/by-hash | wc -l
#    right after the mount (cold: nothing cached by the view nor the
#    kernel) and again (warm).

# pg_mount MNT CMD...: the view of CMD (dupefs and its global flags) at MNT,
# in the background; waits until it answers; sets PG_MNT_PID.
pg_mount() {
	local mnt=$1 i
	shift
	"$@" mount "$mnt" --no-index --no-thumbs 2>"$WORK/pg-mount.err" &
	PG_MNT_PID=$!
	PG_PIDS+=("$PG_MNT_PID")
	for ((i = 0; i < 600; i++)); do
		if [ -r "$mnt/status.json" ] && cat "$mnt/status.json" >/dev/null 2>&1; then return 0; fi
		kill -0 "$PG_MNT_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "pg bench: the view did not mount at $mnt:" >&2
	cat "$WORK/pg-mount.err" >&2
	exit 1
}

# pg_umount MNT: ends pg_mount's view; fails the bench if it is still
# mounted after.
pg_umount() {
	kill -TERM "$PG_MNT_PID" 2>/dev/null || true
	wait "$PG_MNT_PID" 2>/dev/null || true
	pg_ended "$PG_MNT_PID"
	if pg_mounted "$1"; then
		echo "pg bench: $1 still mounted after its process ended" >&2
		exit 1
	fi
}

# pg_lat_files DIR N: N files of distinct sizes, each beside a decoy of its
# size (so the index hashes both at once and the file's group is made by
# its first copy elsewhere), made once.
pg_lat_files() {
	local dir=$1 n=$2 i
	[ -f "$dir.done-$n" ] && return
	rm -rf "$dir"
	mkdir -p "$dir"
	for ((i = 1; i <= n; i++)); do
		{ printf 'dupefs pg bench, commit %05d\n' "$i"; head -c $((1000 + 7 * i)) /dev/zero | tr '\0' a; } >"$dir/f$i"
		{ printf 'dupefs pg bench, decoy  %05d\n' "$i"; head -c $((1000 + 7 * i)) /dev/zero | tr '\0' b; } >"$dir/d$i"
	done
	touch "$dir.done-$n"
}

bench_pg_latency() {
	local base=$WORK/pglat n=$PG_COMMITS mnt=$PG_MNT
	pg_lat_files "$base/a" "$n"
	rm -f "$WORK"/t.pl.*
	local r engine i
	for ((r = 0; r < RUNS; r++)); do
		local order=(postgres sqlite)
		((r % 2)) && order=(sqlite postgres)
		for engine in "${order[@]}"; do
			local as=() bs=()
			case $engine in
			postgres)
				pg_fresh lat
				as=(env DUPEFS_MACHINE_ID=machine-hosta "$BIN" --db "$(pg_url lat)" --host hosta)
				bs=(env DUPEFS_MACHINE_ID=machine-hostb "$BIN" --db "$(pg_url lat)" --host hostb) ;;
			sqlite)
				rm -f "$WORK"/pglat.db*
				as=("$BIN" --db "$WORK/pglat.db")
				bs=("$BIN" --db "$WORK/pglat.db") ;;
			esac
			# b's tree, with a file of its own; its first index, which
			# registers the host and the root, is not timed.
			rm -rf "$base/b"
			mkdir -p "$base/b"
			echo "host b's own file, round $r" >"$base/b/own"
			"${as[@]}" index "$base/a" >/dev/null 2>"$WORK/pglat.err" || {
				echo "pg bench: host a's index failed:" >&2; cat "$WORK/pglat.err" >&2; exit 1; }
			"${bs[@]}" index "$base/b" >/dev/null 2>"$WORK/pglat.err" || {
				echo "pg bench: host b's index failed:" >&2; cat "$WORK/pglat.err" >&2; exit 1; }
			pg_mount "$mnt" "${as[@]}"
			for ((i = 1; i <= n; i++)); do
				cp "$base/a/f$i" "$base/b/c$i"
				"$TOOL" appear -dir "$mnt/by-hash" -name "sha256:$(sha256sum "$base/a/f$i" | cut -d' ' -f1)" -- \
					"${bs[@]}" index "$base/b" >>"$WORK/t.pl.$engine"
			done
			awk '/VmHWM/{print $2}' "/proc/$PG_MNT_PID/status" >>"$WORK/t.pl.$engine.rss"
			pg_umount "$mnt"
		done
		echo "   pg latency round $((r + 1))/$RUNS done" >&2
	done
	{
		echo
		echo "### the view's latency for another host's commit"
		echo
		echo "Host a's view (mount --no-index) over the index; host b (on SQLite: another process on the same file) indexes a small tree that gains a copy of a file of a's each time: from b's process exit to the new group's folder in the view's /by-hash, listed every 10 ms. $n commits a round, $RUNS rounds, the engines in turn; ms."
		echo
		echo "| engine | median ms | p90 ms | max ms | b's index median s | view peak RSS MB | commits |"
		echo "|---|---|---|---|---|---|---|"
		for engine in sqlite postgres; do
			local f=$WORK/t.pl.$engine
			printf '| %s | %.1f | %.1f | %.1f | %.3f | %s | %d |\n' "$engine" "$("$TOOL" median $(col 1 "$f"))" \
				"$(awk '{print $1}' "$f" | sort -n | awk '{a[NR] = $1} END{k = int(NR * 0.9 + 0.5); if (k < 1) k = 1; print a[k]}')" \
				"$(awk '{print $1}' "$f" | sort -n | tail -n1)" "$("$TOOL" median $(col 2 "$f"))" \
				"$(sort -n "$f.rss" | tail -n1 | awk '{printf "%.1f", $1/1024}')" "$(wc -l <"$f")"
		done
	} | tee -a "$RESULTS"
	target "another host's commit in the view through PostgreSQL, median ms" "$("$TOOL" median $(col 1 "$WORK/t.pl.postgres"))" 2000
}

bench_pg_find() {
	local T=$WORK/tree-groups-${PG_GROUPS}x2 mnt=$PG_MNT
	if [ ! -f "$T.done" ]; then
		rm -rf "$T"
		echo "generating $T ($PG_GROUPS groups x 2)..." >&2
		"$TOOL" mkgroups -dir "$T" -groups "$PG_GROUPS" -copies 2
		touch "$T.done"
	fi
	rm -f "$WORK"/t.pf.* "$WORK"/pgfind.db*
	find "$T" -type f -print0 | xargs -0 cat >/dev/null
	# The index, once each (the first part compares first indexes).
	pg_fresh find
	pg_watch
	timed pf.index.postgres "$BIN" --db "$(pg_url find)" index "$T"
	pg_watched "$WORK/t.pf.index.server"
	timed pf.index.sqlite "$BIN" --db "$WORK/pgfind.db" index "$T"
	local r engine
	for ((r = 0; r < RUNS; r++)); do
		local order=(postgres sqlite)
		((r % 2)) && order=(sqlite postgres)
		for engine in "${order[@]}"; do
			local db=$WORK/pgfind.db
			[ "$engine" = postgres ] && db=$(pg_url find)
			pg_mount "$mnt" "$BIN" --db "$db"
			[ "$engine" = postgres ] && pg_watch
			local t0 t1 t2
			t0=$(pg_ticks "$PG_MNT_PID")
			timed "pf.cold.$engine" sh -c "find '$mnt/by-hash' | wc -l >'$WORK/pf.count.$engine'"
			t1=$(pg_ticks "$PG_MNT_PID")
			timed "pf.warm.$engine" sh -c "find '$mnt/by-hash' | wc -l >/dev/null"
			t2=$(pg_ticks "$PG_MNT_PID")
			echo "$((t1 - t0)) $((t2 - t1))" >>"$WORK/t.pf.viewcpu.$engine"
			[ "$engine" = postgres ] && pg_watched "$WORK/t.pf.server"
			awk '/VmHWM/{print $2}' "/proc/$PG_MNT_PID/status" >>"$WORK/t.pf.rss.$engine"
			pg_umount "$mnt"
		done
		echo "   pg find round $((r + 1))/$RUNS done" >&2
	done
	# The server's memory over both walks, in a mount of its own (pg_watch).
	pg_mount "$mnt" "$BIN" --db "$(pg_url find)"
	pg_watch pss
	find "$mnt/by-hash" >/dev/null
	find "$mnt/by-hash" >/dev/null
	pg_watched "$WORK/t.pf.server.memory"
	pg_umount "$mnt"
	local cs cnt
	cs=$(cat "$WORK/pf.count.sqlite") cnt=$(cat "$WORK/pf.count.postgres")
	if [ "$cs" != "$cnt" ] || [ "$cnt" -lt $((3 * PG_GROUPS + 1)) ]; then
		failed "find over the view listed $cnt entries through PostgreSQL, $cs through SQLite (want $((3 * PG_GROUPS + 1)))"
	fi
	local scpu spss icpu
	read -r scpu spss <<<"$(pg_server_stats "$WORK/t.pf.server" "$WORK/t.pf.server.memory")"
	read -r icpu _ <<<"$(pg_server_stats "$WORK/t.pf.index.server" "$WORK/t.pf.server.memory")"
	{
		echo
		echo "### find over $PG_GROUPS groups through the view: $T ($((2 * PG_GROUPS)) files)"
		echo
		echo "find MOUNT/by-hash | wc -l ($cnt entries through each): cold is the first walk after the mount, warm the next; $RUNS mounts each, the engines in turn; medians; the server's peak PSS is of one more mount's two walks, sampled (the timed ones are not). The index was built once each: PostgreSQL $(col 1 "$WORK/t.pf.index.postgres")s (dupefs CPU $(awk '{printf "%.2f", $3 + $4}' "$WORK/t.pf.index.postgres") s, server CPU $icpu s), SQLite $(col 1 "$WORK/t.pf.index.sqlite")s (CPU $(awk '{printf "%.2f", $3 + $4}' "$WORK/t.pf.index.sqlite") s)."
		echo
		echo "| engine | cold s | × SQLite | warm s | × SQLite | view CPU s cold, warm | view peak RSS MB | server CPU s (both walks) | server peak PSS MB | cold runs (s) | warm runs (s) |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|"
		local c0 w0 c w hz
		hz=$(getconf CLK_TCK)
		c0=$("$TOOL" median $(col 1 "$WORK/t.pf.cold.sqlite"))
		w0=$("$TOOL" median $(col 1 "$WORK/t.pf.warm.sqlite"))
		for engine in sqlite postgres; do
			c=$("$TOOL" median $(col 1 "$WORK/t.pf.cold.$engine"))
			w=$("$TOOL" median $(col 1 "$WORK/t.pf.warm.$engine"))
			local sc=- sp=-
			[ "$engine" = postgres ] && sc=$scpu sp=$spss
			printf '| %s | %.3f | %.2f | %.3f | %.2f | %s | %s | %s | %s | %s | %s |\n' "$engine" "$c" \
				"$(awk -v a="$c" -v b="$c0" 'BEGIN{print a/b}')" "$w" "$(awk -v a="$w" -v b="$w0" 'BEGIN{print a/b}')" \
				"$("$TOOL" median $(awk -v hz="$hz" '{print $1 / hz}' "$WORK/t.pf.viewcpu.$engine")), $("$TOOL" median $(awk -v hz="$hz" '{print $2 / hz}' "$WORK/t.pf.viewcpu.$engine"))" \
				"$(sort -n "$WORK/t.pf.rss.$engine" | tail -n1 | awk '{printf "%.1f", $1/1024}')" "$sc" "$sp" \
				"$(col 1 "$WORK/t.pf.cold.$engine")" "$(col 1 "$WORK/t.pf.warm.$engine")"
		done
	} | tee -a "$RESULTS"
}

# The one mount point of both parts, removed by pg_cleanup.
PG_MNT=$(mktemp -d /var/tmp/dupefs-pgbench-mnt-XXXXXX)
PG_MOUNTS+=("$PG_MNT")
