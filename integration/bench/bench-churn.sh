# Sourced by bench.sh: the view following the disk under churn, with each
# watcher backend: inotify (an ordinary user's; as root the bench forces
# it with --watch-backend inotify, the same code an ordinary user's mount
# falls back to) and fanotify (root's). Needs root (mount(2), fanotify);
# says so otherwise. For each backend, one mount goes through:
#  - an untar of CHURN_TAR (a tarball of it, made once) twice into the
#    root: how long after the untar ends the index is up to date and equal
#    to a fresh index of the result, beside that fresh index's time;
#  - rm -rf of both copies: the mount's CPU, and the time to converge;
#  - CHURN_SECS seconds of random changes at CHURN_RATE a second (files
#    made, rewritten, moved, deleted; folders made, moved, removed): the
#    view's latency (from a change on disk to the mount listing it, five
#    probes a second, median and p99), the time to converge after;
# and in each, the mount's CPU and its peak memory (VmHWM, reset between
# parts). The wall times depend on the load of the machine: the load
# average is noted beside them; the CPU times and ratios less so.
CHURN_TAR=${CHURN_TAR:-/usr/share}
CHURN_RATE=${CHURN_RATE:-300}
CHURN_SECS=${CHURN_SECS:-60}

# churn_mount DB MNT TREE ARGS...: mounts in the background and waits until
# the index is up to date; sets CHURN_PID.
churn_mount() {
	local db=$1 mnt=$2 tree=$3
	shift 3
	rm -f "$db"*
	mkdir -p "$mnt"
	"$BIN" --db "$db" mount "$mnt" "$tree" --no-thumbs "$@" 2>"$WORK/churn-mount.log" &
	CHURN_PID=$!
	local i
	for ((i = 0; i < 600; i++)); do
		if grep -q '"hash_up_to_date": true' "$mnt/status.json" 2>/dev/null && grep -q 'watching' "$WORK/churn-mount.log"; then
			return 0
		fi
		sleep 0.5
	done
	echo "bench: the mount did not come up:" >&2
	cat "$WORK/churn-mount.log" >&2
	kill "$CHURN_PID"
	exit 1
}

# ticks_s PID: the user and system CPU seconds of a process so far.
ticks_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f %.2f", $14 / hz, $15 / hz}' "/proc/$1/stat"; }
# hwm_reset PID / hwm_mb PID: the peak RSS of a process, set back to its
# RSS now / read in MB.
hwm_reset() { echo 5 >"/proc/$1/clear_refs"; }
hwm_mb() { awk '/VmHWM/{printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
load1() { cut -d' ' -f1 /proc/loadavg; }
now_s() { date +%s.%N; }

# churn_part NAME: what the mount did from churn_begin to churn_end, once
# the index has settled: one line of results under $WORK/churn.NAME.
churn_begin() {
	hwm_reset "$CHURN_PID"
	read -r CU0 CS0 <<<"$(ticks_s "$CHURN_PID")"
	CLOG0=$(wc -l <"$WORK/churn-mount.log")
	rm -f "$WORK/churn-settle.log"
}
# churn_settle_and_measure NAME TREE END: waits for the index to settle,
# indexes TREE afresh, and records the part.
churn_settle_and_measure() {
	local name=$1 tree=$2 end=$3 load
	load=$(load1)
	"$TOOL" settle -db "$CHURN_DB" -out "$WORK/churn-settle.log" -pid "$CHURN_PID" -quiet 15s -timeout 20m ||
		echo "   $name: not settled" >&2
	local cu cs hwm lines
	read -r cu cs <<<"$(ticks_s "$CHURN_PID")"
	hwm=$(hwm_mb "$CHURN_PID")
	lines=$(($(wc -l <"$WORK/churn-mount.log") - CLOG0))
	rm -f "$WORK"/churn-fresh.db*
	/usr/bin/time -f "%e %M %U %S" -o "$WORK/time.out" "$BIN" --db "$WORK/churn-fresh.db" index "$tree" >/dev/null 2>&1
	local fe fm fu fs conv ccpu same
	read -r fe fm fu fs <"$WORK/time.out"
	read -r conv ccpu <<<"$("$TOOL" converged -log "$WORK/churn-settle.log" -since "$end" -fresh "$WORK/churn-fresh.db")"
	cp "$WORK/churn-settle.log" "$WORK/churn-settle-${name// /-}.log"
	"$BIN" --db "$CHURN_DB" groups --format fdupes >"$WORK/churn-a.out" 2>/dev/null
	"$BIN" --db "$WORK/churn-fresh.db" groups --format fdupes >"$WORK/churn-b.out" 2>/dev/null
	same=$("$TOOL" compare "$WORK/churn-a.out" "$WORK/churn-b.out" 2>&1 | tail -n1)
	# name conv fresh_s fresh_cpu mount_user mount_sys hwm loglines load same conv_cpu
	printf '%s|%s|%s|%.2f|%.2f|%.2f|%s|%s|%s|%s|%s\n' "$name" "$conv" "$fe" "$(awk -v a="$fu" -v b="$fs" 'BEGIN{print a + b}')" \
		"$(awk -v a="$cu" -v b="$CU0" 'BEGIN{print a - b}')" "$(awk -v a="$cs" -v b="$CS0" 'BEGIN{print a - b}')" \
		"$hwm" "$lines" "$load" "$same" "$ccpu" >>"$WORK/churn.results"
	echo "   $name: converged ${conv} s after (${ccpu} s of the mount's CPU; fresh index ${fe} s, $(awk -v a="$fu" -v b="$fs" 'BEGIN{print a + b}') s CPU), mount CPU $(tail -n1 "$WORK/churn.results" | cut -d'|' -f5,6) s, peak ${hwm} MB, load $load; $same" >&2
}

bench_churn() {
	if [ "$(id -u)" != 0 ]; then
		echo "churn bench: needs root (mount(2), fanotify): skipped" | tee -a "$RESULTS"
		return
	fi
	local tar=$WORK/churn-src$(echo "$CHURN_TAR" | tr / -).tar dir=$WORK/churn mnt=$WORK/churn-mnt
	CHURN_DB=$WORK/churn.db
	if [ ! -f "$tar.done" ]; then
		echo "making $tar from $CHURN_TAR..." >&2
		tar -cf "$tar" -C "$(dirname "$CHURN_TAR")" "$(basename "$CHURN_TAR")" 2>/dev/null || true
		touch "$tar.done"
	fi
	trap 'kill -TERM "$CHURN_PID" 2>/dev/null; wait "$CHURN_PID" 2>/dev/null; umount -l "'"$mnt"'" 2>/dev/null' EXIT
	rm -f "$WORK/churn.results"
	local backend
	declare -A lat rows
	for backend in inotify fanotify; do
		rm -rf "$dir"
		mkdir -p "$dir"
		echo "seed" >"$dir/seed"
		churn_mount "$CHURN_DB" "$mnt" "$dir" --watch-backend "$backend"
		echo "== churn, $backend" >&2
		# An untar, twice.
		churn_begin
		local s e
		s=$(now_s)
		mkdir "$dir/u1" "$dir/u2"
		tar -xf "$tar" -C "$dir/u1"
		tar -xf "$tar" -C "$dir/u2"
		e=$(now_s)
		echo "   untar twice: $(awk -v s="$s" -v e="$e" 'BEGIN{printf "%.1f", e - s}') s" >&2
		churn_settle_and_measure "$backend untar" "$dir" "$e"
		# rm -rf of both.
		churn_begin
		s=$(now_s)
		rm -rf "$dir/u1" "$dir/u2"
		e=$(now_s)
		echo "   rm -rf: $(awk -v s="$s" -v e="$e" 'BEGIN{printf "%.1f", e - s}') s" >&2
		churn_settle_and_measure "$backend rm" "$dir" "$e"
		# Random churn.
		"$TOOL" churnprep -dir "$dir/churn"
		"$TOOL" settle -db "$CHURN_DB" -out /dev/null -quiet 5s -timeout 5m
		churn_begin
		lat[$backend]=$("$TOOL" churn -dir "$dir/churn" -mnt "$mnt" -rate "$CHURN_RATE" -secs "$CHURN_SECS")
		e=$(now_s)
		echo "   churn: ${lat[$backend]} (changes, per second, median ms, p99 ms, probes, never shown)" >&2
		churn_settle_and_measure "$backend churn" "$dir" "$e"
		rows[$backend]="$(sqlite3 -readonly "$CHURN_DB" "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM files WHERE missing = 1),
			(SELECT count(*) FROM folders), (SELECT count(*) FROM jobs), (SELECT count(*) FROM scans)" | tr '|' ' ')"
		rows[$backend]+=" $(du -k "$CHURN_DB" | cut -f1) $(du -k "$WORK/churn-fresh.db" | cut -f1)"
		cp "$WORK/churn-mount.log" "$WORK/churn-mount-$backend.log"
		kill -TERM "$CHURN_PID"
		wait "$CHURN_PID" || true
	done
	trap - EXIT
	rm -rf "$dir"
	local files
	files=$(tar -tf "$tar" | grep -vc '/$')
	{
		echo
		echo "### the view following the disk under churn"
		echo
		echo "One mount per backend (inotify: an ordinary user's, forced as root; fanotify: root's), on an empty root: an untar of $CHURN_TAR ($files entries) twice, rm -rf of both, then $CHURN_SECS s of random changes at $CHURN_RATE a second. Converged: seconds from the end of the changes until the index was up to date and equal to a fresh index of the result (totals; 250 ms polls), beside that fresh index's time, and the CPU seconds the mount spent in that time beside the fresh index's (what the wall times come to on a machine with nothing else to do). Mount CPU: user + system seconds of the mount process from the start of the part until it settled (15 s of quiet included). Peak: the mount's VmHWM in the part. Load: the 1-minute load average as the changes ended ($(nproc) CPUs)."
		echo
		echo "| part | converged s | fresh index s | × fresh | CPU to converge s | fresh CPU s | CPU × fresh | mount CPU s in the part (user+sys) | peak MB | log lines | load | groups equal to a fresh index |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
		while IFS='|' read -r name conv fe fcpu mu ms hwm lines load same ccpu; do
			printf '| %s | %s | %s | %s | %s | %s | %s | %.2f (%s+%s) | %s | %s | %s | %s |\n' "$name" "$conv" "$fe" \
				"$(awk -v a="$conv" -v b="$fe" 'BEGIN{print (a < 0) ? "never" : sprintf("%.2f", a / b)}')" "$ccpu" "$fcpu" \
				"$(awk -v a="$ccpu" -v b="$fcpu" -v c="$conv" 'BEGIN{print (c < 0) ? "never" : sprintf("%.2f", a / b)}')" \
				"$(awk -v a="$mu" -v b="$ms" 'BEGIN{print a + b}')" "$mu" "$ms" "$hwm" "$lines" "$load" "$same"
		done <"$WORK/churn.results"
		echo
		echo "Random churn, the view's latency from a change on disk to the mount listing it (probe copies made, moved, deleted in random folders, new ones included):"
		echo
		echo "| backend | changes | per second | median ms | p99 ms | probes | never shown | index rows: files, of them missing, folders, jobs, scans | index KB / fresh KB |"
		echo "|---|---|---|---|---|---|---|---|---|"
		for backend in inotify fanotify; do
			local made rate med p99 n miss f m d j sc kb fkb
			read -r made rate med p99 n miss <<<"${lat[$backend]}"
			read -r f m d j sc kb fkb <<<"${rows[$backend]}"
			echo "| $backend | $made | $rate | $med | $p99 | $n | $miss | $f, $m, $d, $j, $sc | $kb / $fkb |"
		done
	} | tee -a "$RESULTS"
	local b
	for b in inotify fanotify; do
		local conv fe fcpu ccpu
		IFS='|' read -r _ conv fe fcpu _ _ _ _ _ _ ccpu <<<"$(grep "^$b untar|" "$WORK/churn.results")"
		target "$b: converged after an untar × a fresh index" "$(awk -v a="$conv" -v b="$fe" 'BEGIN{printf "%.2f", (a < 0) ? 999 : a / b}')" 1.5
		target "$b: the same in CPU seconds (the mount's to converge × the fresh index's)" "$(awk -v a="$ccpu" -v b="$fcpu" -v c="$conv" 'BEGIN{printf "%.2f", (c < 0) ? 999 : a / b}')" 1.5
		IFS='|' read -r _ conv fe _ <<<"$(grep "^$b churn|" "$WORK/churn.results")"
		target "$b: converged after random churn × a fresh index" "$(awk -v a="$conv" -v b="$fe" 'BEGIN{printf "%.2f", (a < 0) ? 999 : a / b}')" 1.5
		local p99
		read -r _ _ _ p99 _ <<<"${lat[$b]}"
		target "$b: latency p99 at $CHURN_RATE changes/s, s" "$(awk -v a="$p99" 'BEGIN{printf "%.2f", a / 1000}')" 1
		target "$b: mount peak MB" "$(grep "^$b " "$WORK/churn.results" | cut -d'|' -f7 | sort -n | tail -n1)" 100
	done
	local ru rr
	ru=$(grep '^inotify rm|' "$WORK/churn.results" | awk -F'|' '{print $5 + $6}')
	rr=$(grep '^fanotify rm|' "$WORK/churn.results" | awk -F'|' '{print $5 + $6}')
	target "rm -rf, mount CPU inotify / fanotify ($ru / $rr s)" "$(awk -v a="$ru" -v b="$rr" 'BEGIN{printf "%.2f", a / b}')" 2
}
bench_churn
