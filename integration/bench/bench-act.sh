# Sourced by bench.sh: dupefs dedupe and link on a loop-mounted btrfs image
# of a generated tree, beside jdupes -B, duperemove -d --fdupes, jdupes -L
# and the script rmlint writes: time, bytes reclaimed (df before and
# after) and peak memory. Needs root (loop devices); says so otherwise.
ACT_FILES=${ACT_FILES:-5000}

act_image() { # act_image DIR: a fresh btrfs image with the tree copied in
	local dir=$1 img=$1.img
	umount "$dir" 2>/dev/null || true
	rm -f "$img"
	truncate -s 4G "$img"
	mkfs.btrfs -q "$img" >/dev/null 2>&1
	mkdir -p "$dir"
	mount -o loop "$img" "$dir"
	cp -a "$ACT_TREE/." "$dir/"
	sync
}

act_free() { sync; df -B1 --output=avail "$1" | tail -n1; }

bench_act() {
	if [ "$(id -u)" != 0 ]; then
		echo "act bench: needs root (loop-mounted btrfs images): skipped" | tee -a "$RESULTS"
		return
	fi
	ACT_TREE=$(tree "act-$ACT_FILES" "$ACT_FILES" 32768)
	local mnt=$WORK/act-mnt db=$WORK/act.db
	# Never leave the image mounted, even when a tool fails (timed exits).
	trap 'umount "'"$mnt"'" 2>/dev/null; rm -f "'"$mnt"'.img"' EXIT
	rm -f "$WORK"/t.act.*
	declare -A freed
	for ((r = 0; r < RUNS; r++)); do
		for tool in dupefs-dedupe jdupes-B duperemove dupefs-link jdupes-L rmlint-link; do
			act_image "$mnt"
			local before after
			before=$(act_free "$mnt")
			case $tool in
			dupefs-dedupe | dupefs-link)
				local op=${tool#dupefs-}
				# The index is timed with the action: one run of a peer
				# scans and acts.
				rm -f "$db"*
				timed "act.$tool" sh -c "'$BIN' --db '$db' index '$mnt' 2>/dev/null && '$BIN' --db '$db' $op 2>/dev/null" ;;
			jdupes-B) timed "act.$tool" jdupes -r -q -B "$mnt" ;;
			duperemove) timed "act.$tool" sh -c "jdupes -r -q '$mnt' | duperemove -q -d --fdupes >/dev/null 2>&1" ;;
			jdupes-L) timed "act.$tool" jdupes -r -q -L "$mnt" ;;
			rmlint-link) timed "act.$tool" sh -c "cd '$WORK' && rmlint -o sh:'$WORK/rmlint.sh' -c sh:link '$mnt' >/dev/null && sh '$WORK/rmlint.sh' -d >/dev/null" ;;
			esac
			after=$(act_free "$mnt")
			freed[$tool]=$((after - before))
			umount "$mnt"
		done
		echo "   act round $((r + 1))/$RUNS done" >&2
	done
	rm -f "$mnt.img"
	trap - EXIT
	{
		echo
		echo "### dedupe and link on btrfs: $(basename "$ACT_TREE") ($ACT_FILES files), index included"
		echo
		echo "| tool | median s | × peer | peak RSS MB | freed MB (df) |"
		echo "|---|---|---|---|---|"
		for tool in dupefs-dedupe jdupes-B duperemove dupefs-link jdupes-L rmlint-link; do
			local peer=jdupes-B
			case $tool in dupefs-link | jdupes-L | rmlint-link) peer=jdupes-L ;; esac
			local m p
			m=$("$TOOL" median $(col 1 "$WORK/t.act.$tool"))
			p=$("$TOOL" median $(col 1 "$WORK/t.act.$peer"))
			printf '| %s | %.3f | %.2f (%s) | %.1f | %.1f |\n' "$tool" "$m" "$(awk -v a="$m" -v b="$p" 'BEGIN{print a/b}')" "$peer" \
				"$(awk -v k="$(sort -n <(col 2 "$WORK/t.act.$tool" | tr ' ' '\n' | grep .) | tail -n1)" 'BEGIN{print k/1024}')" \
				"$(awk -v b="${freed[$tool]}" 'BEGIN{print b/1048576}')"
		done
	} | tee -a "$RESULTS"
}
bench_act
