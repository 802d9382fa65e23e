# Sourced by bench.sh: dupefs folders beside rmlint -D (time and peak
# memory), after indexing /usr and on a generated tree of about
# FOLDER_COUNT folders; and the time to update the folder signatures after
# one file changes (dupefs index --stats: its folders phase and how many
# folders got new sums).


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
		[ ${#upd[@]} -eq 0 ] || echo "after one file changed ($(awk -F/ '{print NF-1}' <<<"$deep") deep), each run: the folders phase / folder sums rewritten: ${upd[*]}"
	} | tee -a "$RESULTS"
}

if [ -n "$REAL" ]; then bench_folders "$REAL" real; fi
bench_folders "$(folder_tree)" generated
