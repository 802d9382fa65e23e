# Sourced by bench.sh: the mounted view on an index of MOUNT_GROUPS groups
# (3 copies each), beside find over the original files; and the view made
# for people (/files: the groups by rank, copies named by where they live)
# beside /by-hash, the same groups and copies.
MOUNT_GROUPS=${MOUNT_GROUPS:-100000}

bench_mount() {
	local T db mnt pid
	T=$WORK/tree-groups-$MOUNT_GROUPS
	if [ ! -f "$T.done" ]; then
		rm -rf "$T"
		echo "generating $T ($MOUNT_GROUPS groups x 3)..." >&2
		"$TOOL" mkgroups -dir "$T" -groups "$MOUNT_GROUPS" -copies 3
		touch "$T.done"
	fi
	db=$WORK/mount-$MOUNT_GROUPS.db
	mnt=$WORK/mnt
	if [ ! -f "$db.done" ]; then
		rm -f "$db"*
		timed mount-index "$BIN" --db "$db" index "$T"
		touch "$db.done"
	fi
	mkdir -p "$mnt"
	"$BIN" --db "$db" mount "$mnt" --no-index --no-thumbs 2>"$WORK/mount.err" &
	pid=$!
	# Never leave the mount behind.
	trap 'kill -TERM '"$pid"' 2>/dev/null; wait '"$pid"' 2>/dev/null; umount -l "'"$mnt"'" 2>/dev/null' EXIT
	for _ in $(seq 300); do [ -r "$mnt/status.json" ] && cat "$mnt/status.json" >/dev/null 2>&1 && break; sleep 0.1; done
	rm -f "$WORK"/t.m.*
	# The same tree of folders and symlinks as real files on this file
	# system, for the cold walk to be measured against.
	local replica=$WORK/mount-replica-$MOUNT_GROUPS
	if [ ! -f "$replica.done" ]; then
		rm -rf "$replica"
		mkdir -p "$replica"
		echo "copying the view's tree of symlinks to $replica..." >&2
		cp -a "$mnt/by-hash" "$mnt/by-size" "$replica/"
		touch "$replica.done"
	fi
	# The floor of any FUSE view of this shape: the replica served from
	# memory (benchtool fusefloor), answering as the view does but with no
	# index behind it. Only the cold walks use it.
	local floor=$WORK/mnt-floor fpid=
	if cold_ok; then
		mkdir -p "$floor"
		"$TOOL" fusefloor -tree "$replica" -mnt "$floor" 2>"$WORK/fusefloor.err" &
		fpid=$!
		trap 'kill -TERM '"$pid $fpid"' 2>/dev/null; wait '"$pid $fpid"' 2>/dev/null; umount -l "'"$mnt"'" 2>/dev/null; umount -l "'"$floor"'" 2>/dev/null' EXIT
		for _ in $(seq 600); do [ -d "$floor/by-hash" ] && break; sleep 0.1; done
		if [ ! -d "$floor/by-hash" ]; then
			echo "bench: fusefloor did not serve $replica at $floor: $(cat "$WORK/fusefloor.err")" >&2
			return 1
		fi
	fi
	local groups links files
	# Warm runs first, after a walk of each that is not timed: a cold run
	# drops the caches a warm one must find full.
	find "$mnt" -type l >/dev/null
	find "$T" -type f >/dev/null
	for ((r = 0; r < RUNS; r++)); do
		timed m.ls sh -c "ls -f '$mnt/by-hash' | wc -l >'$WORK/m.groups'"
		timed m.find sh -c "find '$mnt/by-hash' '$mnt/by-size' -type l | wc -l >'$WORK/m.links'"
		timed m.findhash sh -c "find '$mnt/by-hash' -type l | wc -l >'$WORK/m.hashlinks'"
		timed m.findfiles sh -c "find '$mnt/files' -type l | wc -l >'$WORK/m.fileslinks'"
		timed m.findorig sh -c "find '$T' -type f | wc -l >'$WORK/m.files'"
	done
	if cold_ok; then
		for ((r = 0; r < RUNS; r++)); do
			drop_caches
			timed m.coldfind sh -c "find '$mnt/by-hash' '$mnt/by-size' -type l | wc -l >/dev/null"
			drop_caches
			timed m.coldhash sh -c "find '$mnt/by-hash' -type l | wc -l >/dev/null"
			drop_caches
			timed m.coldfiles sh -c "find '$mnt/files' -type l | wc -l >/dev/null"
			drop_caches
			timed m.coldfloor sh -c "find '$floor' -type l | wc -l >/dev/null"
			drop_caches
			timed m.coldreplica sh -c "find '$replica' -type l | wc -l >/dev/null"
		done
		kill -TERM "$fpid"
		wait "$fpid" || true
	fi
	# The same view others may enter (--allow-other): every caller answered
	# as the disk would answer them, and nothing kept by the kernel. Its
	# owner's walk, and another user's (setpriv; as root only).
	local other=0 pid2 mnt2=$WORK/mnt-other
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
		other=1
		mkdir -p "$mnt2"
		"$BIN" --db "$db" mount "$mnt2" --no-index --no-thumbs --allow-other 2>"$WORK/mount-other.err" &
		pid2=$!
		trap 'kill -TERM '"$pid $pid2"' 2>/dev/null; wait '"$pid $pid2"' 2>/dev/null; umount -l "'"$mnt"'" 2>/dev/null; umount -l "'"$mnt2"'" 2>/dev/null' EXIT
		for _ in $(seq 300); do [ -r "$mnt2/status.json" ] && cat "$mnt2/status.json" >/dev/null 2>&1 && break; sleep 0.1; done
		for ((r = 0; r < RUNS; r++)); do
			timed m.findowner sh -c "find '$mnt2/by-hash' '$mnt2/by-size' -type l | wc -l >'$WORK/m.linksowner'"
			timed m.findother sh -c "setpriv --reuid=65534 --regid=65534 --clear-groups find '$mnt2/by-hash' '$mnt2/by-size' -type l | wc -l >'$WORK/m.linksother'"
			timed m.filesowner sh -c "find '$mnt2/files' -type l | wc -l >/dev/null"
			timed m.filesother sh -c "setpriv --reuid=65534 --regid=65534 --clear-groups find '$mnt2/files' -type l | wc -l >'$WORK/m.filesother'"
		done
		kill -TERM "$pid2"
		wait "$pid2" || true
	fi
	groups=$(($(cat "$WORK/m.groups") - 2)) # . and ..
	links=$(cat "$WORK/m.links")
	files=$(cat "$WORK/m.files")
	local hwm rss
	hwm=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
	rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
	kill -TERM "$pid"
	wait "$pid" || true
	trap - EXIT
	{
		echo
		echo "### mount: $groups groups, $links symlinks (by-hash + by-size), $files original files"
		echo
		echo "| what | median s | runs (s) |"
		echo "|---|---|---|"
		printf '| ls -f /by-hash | %.3f | %s|\n' "$("$TOOL" median $(col 1 "$WORK/t.m.ls"))" "$(col 1 "$WORK/t.m.ls")"
		printf '| find by-hash by-size -type l | %.3f | %s|\n' "$("$TOOL" median $(col 1 "$WORK/t.m.find"))" "$(col 1 "$WORK/t.m.find")"
		printf '| find by-hash -type l (%s links) | %.3f | %s|\n' "$(cat "$WORK/m.hashlinks")" "$("$TOOL" median $(col 1 "$WORK/t.m.findhash"))" "$(col 1 "$WORK/t.m.findhash")"
		printf '| find files -type l (%s links) | %.3f | %s|\n' "$(cat "$WORK/m.fileslinks")" "$("$TOOL" median $(col 1 "$WORK/t.m.findfiles"))" "$(col 1 "$WORK/t.m.findfiles")"
		printf '| find originals -type f | %.3f | %s|\n' "$("$TOOL" median $(col 1 "$WORK/t.m.findorig"))" "$(col 1 "$WORK/t.m.findorig")"
		if [ "$other" = 1 ]; then
			printf '| find by-hash by-size -type l, --allow-other, as its owner (root) | %.3f | %s|\n' "$("$TOOL" median $(col 1 "$WORK/t.m.findowner"))" "$(col 1 "$WORK/t.m.findowner")"
			printf '| find by-hash by-size -type l, --allow-other, as another user (%s links seen) | %.3f | %s|\n' "$(cat "$WORK/m.linksother")" "$("$TOOL" median $(col 1 "$WORK/t.m.findother"))" "$(col 1 "$WORK/t.m.findother")"
			printf '| find files -type l, --allow-other, as its owner (root) | %.3f | %s|\n' "$("$TOOL" median $(col 1 "$WORK/t.m.filesowner"))" "$(col 1 "$WORK/t.m.filesowner")"
			printf '| find files -type l, --allow-other, as another user (%s links seen) | %.3f | %s|\n' "$(cat "$WORK/m.filesother")" "$("$TOOL" median $(col 1 "$WORK/t.m.filesother"))" "$(col 1 "$WORK/t.m.filesother")"
		fi
		if cold_ok; then
			local c r fl
			c=$("$TOOL" median $(col 1 "$WORK/t.m.coldfind"))
			fl=$("$TOOL" median $(col 1 "$WORK/t.m.coldfloor"))
			r=$("$TOOL" median $(col 1 "$WORK/t.m.coldreplica"))
			printf '| find by-hash by-size -type l, cold | %.3f | %s|\n' "$c" "$(col 1 "$WORK/t.m.coldfind")"
			printf '| find by-hash -type l, cold | %.3f | %s|\n' "$("$TOOL" median $(col 1 "$WORK/t.m.coldhash"))" "$(col 1 "$WORK/t.m.coldhash")"
			printf '| find files -type l, cold | %.3f | %s|\n' "$("$TOOL" median $(col 1 "$WORK/t.m.coldfiles"))" "$(col 1 "$WORK/t.m.coldfiles")"
			printf '| the same find over the same tree served from memory over FUSE (fusefloor), cold | %.3f | %s|\n' "$fl" "$(col 1 "$WORK/t.m.coldfloor")"
			printf '| find -type l over the same tree as real files, cold | %.3f | %s|\n' "$r" "$(col 1 "$WORK/t.m.coldreplica")"
			echo
			printf 'cold walk of the mount: %.2f x the same walk over real files; the FUSE floor (fusefloor): %.2f x\n' \
				"$(awk -v a="$c" -v b="$r" 'BEGIN{print a/b}')" "$(awk -v a="$fl" -v b="$r" 'BEGIN{print a/b}')"
			target "mount: cold find of $MOUNT_GROUPS groups × the same walk over real files (fusefloor: $(awk -v a="$fl" -v b="$r" 'BEGIN{printf "%.2f", a/b}'))" "$(awk -v a="$c" -v b="$r" 'BEGIN{printf "%.2f", a/b}')" 1.5
		else
			echo
			echo "cold runs need root (to drop the page cache): skipped"
		fi
		echo
		printf 'mount process after the walks: peak RSS %.1f MB, RSS %.1f MB\n' "$(awk -v k="$hwm" 'BEGIN{print k/1024}')" "$(awk -v k="$rss" 'BEGIN{print k/1024}')"
	} | tee -a "$RESULTS"
}
bench_mount
