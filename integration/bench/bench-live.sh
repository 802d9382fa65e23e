# Sourced by bench.sh: the view following the disk, and copies served as
# files. Needs root (mount(2), fanotify, dropping caches); says so
# otherwise.
#  - latency from a change on disk to the view, LIVE_N copies made and
#    removed, median and p99, with each watcher backend;
#  - the watcher at rest on the generated tree of FOLDER_COUNT folders:
#    CPU over 30 s and RSS, with each backend;
#  - --serve files: dd of a 1 GiB copy and cat of 2,000 small ones through
#    the mount (FUSE passthrough, and reads through dupefs) beside the
#    originals, warm and cold.
LIVE_N=${LIVE_N:-200}

# live_mount DB MNT TREE ARGS...: mounts in the background and waits until
# the index is up to date; sets LIVE_PID.
live_mount() {
	local db=$1 mnt=$2 tree=$3
	shift 3
	rm -f "$db"*
	mkdir -p "$mnt"
	"$BIN" --db "$db" mount "$mnt" "$tree" --no-thumbs "$@" 2>"$WORK/live-mount.log" &
	LIVE_PID=$!
	local i
	for ((i = 0; i < 600; i++)); do
		if grep -q '"hash_up_to_date": true' "$mnt/status.json" 2>/dev/null && grep -q 'watching\|mounted' "$WORK/live-mount.log"; then
			sleep 1 # the first fold and the watcher's start
			return 0
		fi
		sleep 0.5
	done
	echo "bench: the mount did not come up:" >&2
	cat "$WORK/live-mount.log" >&2
	kill "$LIVE_PID"
	exit 1
}

live_umount() {
	kill -TERM "$LIVE_PID" 2>/dev/null || true
	wait "$LIVE_PID" 2>/dev/null || true
}

# cpu_ticks PID: user+system clock ticks of a process.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# secs CMD...: wall seconds a command takes.
secs() {
	local s e
	s=$(date +%s.%N)
	"$@" >/dev/null 2>&1
	e=$(date +%s.%N)
	awk -v s="$s" -v e="$e" 'BEGIN{printf "%.3f", e - s}'
}

bench_live() {
	if [ "$(id -u)" != 0 ]; then
		echo "live bench: needs root (mount(2), fanotify, drop caches): skipped" | tee -a "$RESULTS"
		return
	fi
	local dir=$WORK/live mnt=$WORK/live-mnt db=$WORK/live.db
	trap 'kill -TERM "$LIVE_PID" 2>/dev/null; wait "$LIVE_PID" 2>/dev/null; umount -l "'"$mnt"'" 2>/dev/null' EXIT
	rm -rf "$dir"
	mkdir -p "$dir"
	head -c 200000 /dev/urandom >"$dir/seed"
	cp "$dir/seed" "$dir/seed-copy"
	declare -A lat rest
	for backend in fanotify inotify; do
		live_mount "$db" "$mnt" "$dir" --watch-backend "$backend"
		local key
		key=$(ls "$mnt/by-hash")
		lat[$backend]=$("$TOOL" latency -mnt "$mnt" -tree "$dir" -seed "$dir/seed" -group "by-hash/$key" -n "$LIVE_N")
		live_umount
		echo "   latency, $backend: ${lat[$backend]}" >&2
	done
	# At rest on the large tree.
	local big
	big=$(folder_tree)
	for backend in fanotify inotify; do
		live_mount "$db" "$mnt" "$big" --watch-backend "$backend"
		local t0 t1
		t0=$(cpu_ticks "$LIVE_PID")
		sleep 30
		t1=$(cpu_ticks "$LIVE_PID")
		rest[$backend]="$(awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f%%", 100 * (b - a) / hz / 30}') CPU, $(awk '/VmRSS/{printf "%.1f MB", $2/1024}' "/proc/$LIVE_PID/status")"
		live_umount
		echo "   at rest, $backend: ${rest[$backend]}" >&2
	done
	# Copies served as files.
	local files=$WORK/live-files
	if [ ! -f "$files.done" ]; then
		rm -rf "$files"
		mkdir -p "$files/big" "$files/small"
		head -c $((1 << 30)) /dev/urandom >"$files/big/a"
		cp "$files/big/a" "$files/big/b"
		local i
		for ((i = 0; i < 1000; i++)); do
			head -c 16384 /dev/urandom >"$files/small/s$i"
			cp "$files/small/s$i" "$files/small/t$i"
		done
		touch "$files.done"
	fi
	declare -A thr
	local mode
	for mode in passthrough through-dupefs; do
		local extra=()
		[ "$mode" = through-dupefs ] && extra=(--no-passthrough)
		live_mount "$db" "$mnt" "$files" --serve files --no-watch "${extra[@]}"
		local bigcopy
		bigcopy=$(find "$mnt/by-hash" -size +1000000k -type f | head -n1)
		for cache in warm cold; do
			local r1 r2 r3 r4
			[ "$cache" = warm ] && { cat "$bigcopy" >/dev/null; cat "$files/big/a" >/dev/null; find "$mnt/by-hash" -size -20k -type f -print0 | xargs -0 cat >/dev/null; }
			[ "$cache" = cold ] && drop_caches
			r1=$(secs dd if="$bigcopy" of=/dev/null bs=1M)
			[ "$cache" = cold ] && drop_caches
			r2=$(secs dd if="$files/big/a" of=/dev/null bs=1M)
			[ "$cache" = cold ] && drop_caches
			r3=$(secs sh -c "find '$mnt/by-hash' -size -20k -type f -print0 | xargs -0 cat")
			[ "$cache" = cold ] && drop_caches
			r4=$(secs sh -c "find '$files/small' -type f -print0 | xargs -0 cat")
			thr[$mode.$cache]="$r1 $r2 $r3 $r4"
			echo "   serve files, $mode, $cache: $r1 $r2 $r3 $r4" >&2
		done
		live_umount
	done
	trap - EXIT
	{
		echo
		echo "### the view following the disk"
		echo
		echo "From a change on disk to the view ($LIVE_N copies made, then removed; ms):"
		echo
		echo "| backend | new copy median | p99 | removed median | p99 |"
		echo "|---|---|---|---|---|"
		for backend in fanotify inotify; do
			read -r a b c d <<<"${lat[$backend]}"
			echo "| $backend | $a | $b | $c | $d |"
		done
		echo
		echo "The watcher at rest, $(basename "$big") ($(find "$big" -type d | wc -l) folders), mount process over 30 s: fanotify ${rest[fanotify]}; inotify ${rest[inotify]}"
		echo
		echo "### --serve files: reading copies through the mount (s)"
		echo
		echo "| | dd 1 GiB copy | dd the original | cat 2,000 × 16 KiB copies | cat the originals |"
		echo "|---|---|---|---|---|"
		for mode in passthrough through-dupefs; do
			for cache in warm cold; do
				read -r a b c d <<<"${thr[$mode.$cache]}"
				echo "| $mode, $cache | $a | $b | $c | $d |"
			done
		done
	} | tee -a "$RESULTS"
}
bench_live
