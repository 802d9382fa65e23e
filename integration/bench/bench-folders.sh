# Sourced by bench.sh: dupefs folders beside rmlint -D (time and peak
# memory), after indexing /usr and on a generated tree of about
# FOLDER_COUNT folders; and the time to update the folder signatures after
# one file changes (dupefs index --stats: its folders phase and how many
# folders got new sums). Then the mount's /folders and /overlap walked
# with find beside /by-folder, and the listing of one pair of
# BIGPAIR_FILES (100000) files a side, a quarter of them only on each
# side: its time and the mount's memory.


# stat_of LINE KEY: the number before KEY in an --stats line.
stat_of() { sed -n "s/.*$2 \([0-9.]*\)s.*/\1/p" <<<"$1"; }

bench_folders() {
	local T=$1 name=$2 db=$WORK/folders.db
	rm -f "$db"* "$WORK"/t.fold.*
	echo "== folders, $name: $T" >&2
	timed "fold.index" "$BIN" --db "$db" index "$T"
	local ndirs nfiles
	ndirs=$(find "$T" -xdev -type d | wc -l)
	nfiles=$(find "$T" -xdev -type f | wc -l)
	for ((r = 0; r < RUNS; r++)); do
		timed "fold.dupefs" "$BIN" --db "$db" folders --format json
		timed "fold.exact" "$BIN" --db "$db" folders --exact-only --format json
		rm -f "$WORK/rmlint-D.json"
		timed "fold.rmlint" sh -c "cd '$WORK' && rmlint -D -o json:'$WORK/rmlint-D.json' '$T' >/dev/null 2>&1"
	done
	"$BIN" --db "$db" folders --format json >"$WORK/folders.json"
	# The views of the folders, mounted without indexing.
	local mnt=$WORK/mnt-folders pid
	mkdir -p "$mnt"
	"$BIN" --db "$db" mount "$mnt" --no-index --no-thumbs 2>"$WORK/mount-folders.err" &
	pid=$!
	trap 'kill -TERM '"$pid"' 2>/dev/null; wait '"$pid"' 2>/dev/null; umount -l "'"$mnt"'" 2>/dev/null' EXIT
	for _ in $(seq 300); do [ -r "$mnt/status.json" ] && cat "$mnt/status.json" >/dev/null 2>&1 && break; sleep 0.1; done
	for ((r = 0; r < RUNS; r++)); do
		for v in by-folder folders overlap; do
			timed "fold.find-$v" sh -c "find '$mnt/$v' | wc -l >'$WORK/fold.n-$v'"
		done
	done
	kill -TERM "$pid"
	wait "$pid" || true
	trap - EXIT
	local exact partial rmgroups
	exact=$(grep -c '"key"' "$WORK/folders.json" || true)
	partial=$(grep -c '"similarity"' "$WORK/folders.json" || true)
	rmgroups=$(grep -o '"type": *"duplicate_dir"' "$WORK/rmlint-D.json" | wc -l)
	# One file changes, deep in the generated tree (/usr is not ours to
	# change): only its folder and their ancestors get new sums.
	local upd=()
	if [ "$name" = generated ]; then
		local deep
		deep=$(find "$T" -xdev -type f -size +0 | awk -F/ '{print NF, $0}' | sort -n | tail -n1 | cut -d' ' -f2-)
		for ((r = 0; r < RUNS; r++)); do
			echo "changed $r" >>"$deep"
			local line
			line=$("$BIN" --db "$db" index --stats 2>&1 | grep '^stats:')
			upd+=("$(stat_of "$line" folders)s/$(sed -n 's/.*; \([0-9]*\) folder signatures updated.*/\1/p' <<<"$line")")
		done
	fi
	{
		echo
		echo "### folders, $name: $T ($ndirs folders, $nfiles files)"
		echo
		echo "| | median s | × rmlint -D | peak RSS MB | runs (s) |"
		echo "|---|---|---|---|---|"
		local rm
		rm=$("$TOOL" median $(col 1 "$WORK/t.fold.rmlint"))
		for t in dupefs exact rmlint; do
			local m label
			m=$("$TOOL" median $(col 1 "$WORK/t.fold.$t"))
			case $t in dupefs) label="dupefs folders" ;; exact) label="dupefs folders --exact-only" ;; rmlint) label="rmlint -D" ;; esac
			printf '| %s | %.3f | %.2f | %.1f | %s|\n' "$label" "$m" "$(awk -v a="$m" -v b="$rm" 'BEGIN{print a/b}')" \
				"$(awk -v k="$(sort -n <(col 2 "$WORK/t.fold.$t" | tr ' ' '\n' | grep .) | tail -n1)" 'BEGIN{print k/1024}')" \
				"$(col 1 "$WORK/t.fold.$t")"
		done
		printf '\nfirst dupefs index (folder signatures included): %ss, peak RSS %.1f MB; rmlint -D does its whole search in the time above\n' \
			"$(col 1 "$WORK/t.fold.index")" "$(awk -v k="$(col 2 "$WORK/t.fold.index")" 'BEGIN{print k/1024}')"
		echo "dupefs: $exact exact groups, $partial partial pairs; rmlint -D: $rmgroups duplicate folders"
		for v in by-folder folders overlap; do
			printf 'find mount/%s: %s entries, median %.3f s (runs: %s; the first cold)\n' "$v" "$(cat "$WORK/fold.n-$v")" \
				"$("$TOOL" median $(col 1 "$WORK/t.fold.find-$v"))" "$(col 1 "$WORK/t.fold.find-$v")"
		done
		[ ${#upd[@]} -eq 0 ] || echo "after one file changed ($(awk -F/ '{print NF-1}' <<<"$deep") deep), each run: the folders phase / folder sums rewritten: ${upd[*]}"
	} | tee -a "$RESULTS"
}

# bench_bigpair: a folder a of BIGPAIR_FILES sparse files and a folder b
# holding links to three quarters of them and as many new files again:
# one pair, 60% alike, a quarter of a's files only in a and as many only
# in b. The mount lists each side; its memory must not grow with them.
bench_bigpair() {
	local n=${BIGPAIR_FILES:-100000} dir=$WORK/bigpair db=$WORK/bigpair.db mnt=$WORK/mnt-bigpair pid
	if [ ! -f "$dir.done" ]; then
		rm -rf "$dir" "$dir-new"
		"$TOOL" mksizes -dir "$dir/a" -files "$n" -per-folder 0
		cp -al "$dir/a" "$dir/b"
		(cd "$dir/b" && printf 'f%07d\0' $(seq $((n * 3 / 4 + 1)) "$n") | xargs -0 rm -f)
		"$TOOL" mksizes -dir "$dir-new" -files $((n / 4)) -per-folder 0 -offset $((2 * n))
		find "$dir-new" -type f -exec mv -t "$dir/b" {} +
		rmdir "$dir-new"
		touch "$dir.done"
	fi
	echo "== folders, one big pair: $dir" >&2
	rm -f "$db"* "$WORK"/t.bp.*
	timed bp.index "$BIN" --db "$db" index "$dir"
	timed bp.folders "$BIN" --db "$db" folders --format json
	mkdir -p "$mnt"
	"$BIN" --db "$db" mount "$mnt" --no-index --no-thumbs 2>"$WORK/mount-bigpair.err" &
	pid=$!
	trap 'kill -TERM '"$pid"' 2>/dev/null; wait '"$pid"' 2>/dev/null; umount -l "'"$mnt"'" 2>/dev/null' EXIT
	for _ in $(seq 300); do [ -r "$mnt/status.json" ] && cat "$mnt/status.json" >/dev/null 2>&1 && break; sleep 0.1; done
	local label hwm0 hwm side sides=() listed=()
	label=$(ls "$mnt/overlap" | head -n1)
	hwm0=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
	while IFS= read -r side; do sides+=("$side"); done < <(ls "$mnt/overlap/$label")
	for ((r = 0; r < RUNS; r++)); do
		for side in "${sides[@]}"; do
			timed bp.ls sh -c "ls -f '$mnt/overlap/$label/$side' | wc -l >'$WORK/bp.n'"
			listed+=("$(($(cat "$WORK/bp.n") - 2))")
		done
	done
	hwm=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
	kill -TERM "$pid"
	wait "$pid" || true
	trap - EXIT
	{
		echo
		echo "### folders, one big pair: $label, $n files a side"
		echo
		printf 'first dupefs index (the pair and its lists included): %ss, peak RSS %.1f MB; dupefs folders: %ss, %.1f MB\n' \
			"$(col 1 "$WORK/t.bp.index")" "$(awk -v k="$(col 2 "$WORK/t.bp.index")" 'BEGIN{print k/1024}')" \
			"$(col 1 "$WORK/t.bp.folders")" "$(awk -v k="$(col 2 "$WORK/t.bp.folders")" 'BEGIN{print k/1024}')"
		printf 'ls -f of each side (%s entries each run): median %.3f s (runs: %s)\n' "${listed[*]}" \
			"$("$TOOL" median $(col 1 "$WORK/t.bp.ls"))" "$(col 1 "$WORK/t.bp.ls")"
		printf 'mount process: peak RSS %.1f MB before the listings, %.1f MB after\n' \
			"$(awk -v k="$hwm0" 'BEGIN{print k/1024}')" "$(awk -v k="$hwm" 'BEGIN{print k/1024}')"
	} | tee -a "$RESULTS"
}

if [ -n "$REAL" ]; then bench_folders "$REAL" real; fi
bench_folders "$(folder_tree)" generated
bench_bigpair
