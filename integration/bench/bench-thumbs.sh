# Sourced by bench.sh: thumbnails a second and peak memory of `dupefs thumbs`
# on THUMB_PHOTOS generated 12-megapixel JPEG photos (4000x3000, about 3 MB,
# with sensor-like noise), each with one copy, so each is a group. Beside
# it, for scale: ffmpeg making the same thumbnails, one process per photo,
# as many at once as there are CPUs (what a shell script would do).
THUMB_PHOTOS=${THUMB_PHOTOS:-300}

bench_thumbs() {
	local T db cache n
	if ! need ffmpeg; then
		if [ "$(id -u)" != 0 ]; then echo "bench: the thumbnail bench needs ffmpeg" >&2; exit 1; fi
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null
	fi
	T=$WORK/tree-photos-$THUMB_PHOTOS
	if [ ! -f "$T.done" ]; then
		rm -rf "$T"
		mkdir -p "$T/photos"
		echo "generating $T ($THUMB_PHOTOS photos of 12 megapixels, and a copy of each)..." >&2
		ffmpeg -loglevel error -f lavfi -i "testsrc2=size=4000x3000:rate=1" -vf "noise=alls=10:allf=t" \
			-frames:v "$THUMB_PHOTOS" -q:v 3 "$T/photos/p%04d.jpg"
		cp -r "$T/photos" "$T/copies"
		touch "$T.done"
	fi
	db=$WORK/thumbs.db
	cache=$WORK/thumbcache
	rm -f "$WORK"/thumbs-base.db*
	"$BIN" --db "$WORK/thumbs-base.db" index "$T" 2>/dev/null
	rm -f "$WORK"/t.th.*
	for ((r = 0; r < RUNS; r++)); do
		rm -rf "$cache" "$WORK/ffthumbs" "$db"*
		cp "$WORK/thumbs-base.db" "$db"
		timed th.dupefs "$BIN" --db "$db" --cache-dir "$cache" thumbs --thumb-read-rate 0
		mkdir -p "$WORK/ffthumbs"
		timed th.ffmpeg sh -c "ls '$T/photos' | xargs -P $(nproc) -I{} ffmpeg -loglevel error -i '$T/photos/{}' \
			-vf scale=256:256:force_original_aspect_ratio=decrease -q:v 3 '$WORK/ffthumbs/{}'"
	done
	n=$(find "$cache" -name '*.jpg' | wc -l)
	[ "$n" -eq "$THUMB_PHOTOS" ] || { echo "bench: dupefs thumbs made $n thumbnails of $THUMB_PHOTOS" >&2; exit 1; }
	{
		echo
		echo "### thumbnails: $THUMB_PHOTOS groups of 12-megapixel JPEGs ($(du -sh "$T/photos" | cut -f1) of photos)"
		echo
		echo "| what | median s | thumbnails/s | × dupefs | peak RSS MB | runs (s) |"
		echo "|---|---|---|---|---|---|"
		local md mf
		md=$("$TOOL" median $(col 1 "$WORK/t.th.dupefs"))
		mf=$("$TOOL" median $(col 1 "$WORK/t.th.ffmpeg"))
		printf '| dupefs thumbs | %.2f | %.1f | 1.00 | %.1f | %s|\n' "$md" "$(awk -v n="$THUMB_PHOTOS" -v s="$md" 'BEGIN{print n/s}')" \
			"$(awk -v k="$(sort -n <(col 2 "$WORK/t.th.dupefs" | tr ' ' '\n' | grep .) | tail -n1)" 'BEGIN{print k/1024}')" "$(col 1 "$WORK/t.th.dupefs")"
		printf '| ffmpeg per photo, %d at once | %.2f | %.1f | %.2f | %.1f (one process) | %s|\n' "$(nproc)" "$mf" \
			"$(awk -v n="$THUMB_PHOTOS" -v s="$mf" 'BEGIN{print n/s}')" "$(awk -v a="$mf" -v b="$md" 'BEGIN{print a/b}')" \
			"$(awk -v k="$(sort -n <(col 2 "$WORK/t.th.ffmpeg" | tr ' ' '\n' | grep .) | tail -n1)" 'BEGIN{print k/1024}')" "$(col 1 "$WORK/t.th.ffmpeg")"
	} | tee -a "$RESULTS"
}
bench_thumbs
