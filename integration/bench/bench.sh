#!/usr/bin/env bash
# make bench: dupefs side by side with jdupes, rdfind, fdupes and rmlint, in
# one run, on the same trees, warm cache, alternating runs; medians, ratios
# to the fastest peer, CPU time and peak RSS (/usr/bin/time). It also checks
# that dupefs finds the same duplicate set as jdupes -r. Beside the peers
# runs floor-statwalk (benchtool statwalk): only the system calls any
# re-index must make, the measured floor of dupefs' re-index; and, warm,
# floor-sqlite (benchtool sqlfloor): the SQLite work of the first index
# alone, its rows written once through the one writer SQLite allows, the
# measured floor of dupefs' first index; and the mount
# part walks the view's tree served from memory over FUSE (benchtool
# fusefloor), the floor of the mount's cold walk. The results end with the
# speed targets of the project this run met and missed.
#
# Knobs (environment):
#   RUNS=5              timed runs per tool (after one untimed warm-up run)
#   BENCH_FILES=100000  files in the generated tree
#   BENCH_TREE=/usr     a real tree too ("" to skip)
#   PHOTOS=2200         files of 2-8 MB in the photo-like tree (0 to skip):
#                       a fifth copies, EDITS same-size edits that differ
#                       only in the middle (EDITS=200); about 9 GB
#   SCALE=1000000       also index a tree of SCALE small files and a tenth of
#                       it, to show the peak memory of dupefs index is flat;
#                       and SCALE sparse files of distinct sizes and a tenth,
#                       four hard-linked snapshots of a tenth, and a tenth
#                       in one folder (with jdupes' peak beside it)
#   SCALE_RUNS=3        first indexes of each of those trees (medians)
#   MOUNT_GROUPS=100000 groups (of 3 copies) in the index the mount bench
#                       walks (bench-mount.sh)
#   THUMB_PHOTOS=300    12-megapixel photos the thumbnail bench makes
#                       thumbnails of (bench-thumbs.sh)
#   FOLDER_COUNT=100000 folders of the generated tree of the folder and
#                       watcher benches (bench-folders.sh, bench-live.sh)
#   BIGPAIR_FILES=100000  files a side of the one big pair of folders whose
#                       listing bench-folders.sh measures
#   LIVE_N=200          changes whose latency bench-live.sh measures
#   CHURN_TAR=/usr/share  the tree bench-churn.sh untars twice into a mount
#   CHURN_RATE=300 CHURN_SECS=60  its random changes: how many a second,
#                       for how long
#   PG_HOSTS PG_COMMITS PG_GROUPS  the trees, commits and groups of
#                       bench-pg.sh's parts (see there)
#   ONLY=mount          run only the named part (index, cold, photos, scale,
#                       or a bench-NAME.sh: act, churn, folders, live, mount,
#                       pg, thumbs)
#   BEFORE=path         also the first index by another build of dupefs
#                       (dupefs-before), run in turn with the others, to
#                       measure a change in the same run
#   COLD=1              also cold-cache runs (as root: sync and drop caches
#                       before each; 0 skips them)
#   BENCH_DIR=/tmp/dupefs-bench   where trees, indexes and results go
#   BENCH_LOG=integration/bench/RESULTS.md   the dated log the run's results
#                       are appended to when it ends ("" to leave it alone)
set -euo pipefail
cd "$(dirname "$0")/../.."
# knobs: the command as it was typed, with the knobs set in the environment
# (before this script sets its defaults).
knobs() {
	local v out=""
	for v in RUNS BENCH_FILES BENCH_TREE PHOTOS EDITS SCALE SCALE_RUNS MOUNT_GROUPS THUMB_PHOTOS FOLDER_COUNT \
		BIGPAIR_FILES LIVE_N ACT_FILES CHURN_TAR CHURN_RATE CHURN_SECS PG_HOSTS PG_COMMITS PG_GROUPS ONLY COLD BENCH_DIR BEFORE; do
		if [ -n "${!v+x}" ]; then out+="$v=${!v} "; fi
	done
	echo "${out}make bench"
}
COMMAND=$(knobs)
ROOT=$PWD
BIN=$ROOT/bin/dupefs
WORK=${BENCH_DIR:-/tmp/dupefs-bench}
RUNS=${RUNS:-5}
FILES=${BENCH_FILES:-100000}
REAL=${BENCH_TREE-/usr}
SCALE=${SCALE:-}
PHOTOS=${PHOTOS:-2200}
EDITS=${EDITS:-200}
mkdir -p "$WORK"
RESULTS=$WORK/results.md
LOG=${BENCH_LOG-$ROOT/integration/bench/RESULTS.md}
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
# target LABEL VALUE LIMIT: a figure the speed targets bound (VALUE <= LIMIT),
# summed up at the end of the results.
TARGETS=$WORK/targets.txt
rm -f "$TARGETS"
target() { printf '%s|%s|%s\n' "$1" "$2" "$3" >>"$TARGETS"; }
# failed WHAT: a check of the results that failed; the bench goes on
# measuring, lists them at the end and exits 1.
FAILED=$WORK/failed.txt
rm -f "$FAILED"
failed() {
	echo "$1" >>"$FAILED"
	echo "bench: FAILED: $1" >&2
}
# floor-statwalk's threads: more than CPUs, a listing waits on the disk at times.
FLOOR_THREADS=$((4 * $(nproc)))

need() { command -v "$1" >/dev/null 2>&1; }
install_peers() {
	local missing=()
	for p in jdupes rdfind fdupes rmlint; do need "$p" || missing+=("$p"); done
	[ -x /usr/bin/time ] || missing+=(time)
	[ ${#missing[@]} -eq 0 ] && return
	if [ "$(id -u)" != 0 ]; then
		echo "bench: install ${missing[*]} (Debian packages), or run as root to let the bench install them" >&2
		exit 1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}
install_peers
[ -x "$BIN" ] || { echo "bench: build first (make build)" >&2; exit 1; }
go build -o "$WORK/benchtool" ./integration/bench/benchtool
TOOL=$WORK/benchtool

# tree NAME FILES AVG: a generated tree, made once and kept.
tree() {
	local dir=$WORK/tree-$1
	if [ ! -f "$dir.done" ]; then
		rm -rf "$dir"
		echo "generating $dir ($2 files)..." >&2
		"$TOOL" mktree -dir "$dir" -files "$2" -avg "$3" -seed 1
		touch "$dir.done"
	fi
	echo "$dir"
}

# photos N: the photo-like tree, made once and kept.
photos() {
	local dir=$WORK/photos-$1-$EDITS
	if [ ! -f "$dir.done" ]; then
		rm -rf "$dir"
		echo "generating $dir ($1 photos)..." >&2
		"$TOOL" mkphotos -dir "$dir" -files "$1" -edits "$EDITS" -seed 1
		touch "$dir.done"
	fi
	echo "$dir"
}

# folder_tree: the generated tree of about FOLDER_COUNT folders (the
# folder and watcher benches), made once and kept.
FOLDER_COUNT=${FOLDER_COUNT:-100000}
folder_tree() {
	local dir=$WORK/folders-$FOLDER_COUNT
	if [ ! -f "$dir.done" ]; then
		rm -rf "$dir"
		echo "generating $dir (about $FOLDER_COUNT folders)..." >&2
		"$TOOL" mkfolders -dir "$dir" -folders "$FOLDER_COUNT" -seed 1
		touch "$dir.done"
	fi
	echo "$dir"
}

# timed LABEL CMD...: runs CMD under /usr/bin/time, appends "seconds
# maxrss_kb user_s sys_s" to $WORK/t.LABEL.
timed() {
	local label=$1; shift
	/usr/bin/time -f "%e %M %U %S" -o "$WORK/time.out" "$@" >/dev/null 2>"$WORK/stderr.out" || {
		echo "bench: $label failed:" >&2; cat "$WORK/stderr.out" >&2; exit 1; }
	tail -n1 "$WORK/time.out" >>"$WORK/t.$label"
}

# The tools, as commands over $T (tree) with outputs under $WORK.
run_tool() {
	local tool=$1 T=$2
	case $tool in
	dupefs-index)
		rm -f "$WORK"/bench.db*
		timed "$tool" "$BIN" --db "$WORK/bench.db" index "$T" ;;
	dupefs-before)
		rm -f "$WORK"/before.db*
		timed "$tool" "$BEFORE" --db "$WORK/before.db" index "$T" ;;
	dupefs-reindex)
		timed "$tool" "$BIN" --db "$WORK/bench.db" index "$T" ;;
	jdupes) timed "$tool" sh -c "jdupes -r -q '$T' >'$WORK/jdupes.out'" ;;
	rdfind) timed "$tool" rdfind -outputname "$WORK/rdfind.out" "$T" ;;
	fdupes) timed "$tool" sh -c "fdupes -r -q '$T' >'$WORK/fdupes.out'" ;;
	# rmlint keeps an output it would overwrite under a dated name.
	rmlint) rm -f "$WORK/rmlint.out"; timed "$tool" rmlint -T df -o "fdupes:$WORK/rmlint.out" "$T" ;;
	# Not a peer: the system calls any re-index must make (benchtool
	# statwalk), the measured floor of dupefs-reindex.
	floor-statwalk) timed "$tool" "$TOOL" statwalk -dir "$T" -workers "$FLOOR_THREADS" ;;
	# Not a peer either: the rows of the index dupefs-index just built,
	# written again into a new index through dupefs' own write path, each
	# once (benchtool sqlfloor times that part itself): the SQLite work
	# alone, the measured floor of dupefs-index.
	floor-sqlite)
		"$TOOL" sqlfloor -from "$WORK/bench.db" -db "$WORK/floor/floor.db" -times "$WORK/t.$tool" >"$WORK/stderr.out" 2>&1 || {
			echo "bench: $tool failed:" >&2; cat "$WORK/stderr.out" >&2; exit 1; } ;;
	esac
}

col() { awk -v c="$1" '{print $c}' "$2" | tr '\n' ' '; }

# Cold runs drop the page cache before each run, which needs root; without
# it they are skipped and the results say so (COLD=0 skips them too).
cold_ok() { [ "${COLD:-1}" != 0 ] && [ "$(id -u)" = 0 ]; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# bench NAME TREE [cold]: every tool, RUNS rounds, rotating which goes
# first; with cold, the page cache is dropped before every run (no warm-up
# round then).
bench() {
	local name=$1 T=$2 cold=${3:-}
	local tools=(dupefs-index dupefs-reindex jdupes rdfind fdupes rmlint floor-statwalk)
	local others=(jdupes rdfind fdupes rmlint floor-statwalk)
	if [ -n "${BEFORE:-}" ]; then tools+=(dupefs-before); others+=(dupefs-before); fi
	# floor-sqlite reads nothing of the tree: the same warm or cold.
	local ours=(dupefs-index dupefs-reindex)
	[ -z "$cold" ] && ours+=(floor-sqlite)
	tools+=("${ours[@]:2}")
	local label="$name"
	[ -n "$cold" ] && label="$name, cold cache"
	rm -f "$WORK"/t.*
	echo "== $label: $T ($(find "$T" -xdev -type f 2>/dev/null | wc -l) files)" >&2
	if [ -z "$cold" ]; then
		for tool in "${tools[@]}"; do run_tool "$tool" "$T"; done # warm-up
		rm -f "$WORK"/t.*
	fi
	for ((r = 0; r < RUNS; r++)); do
		# dupefs-reindex and floor-sqlite must follow dupefs-index (they
		# use its index); rotate the rest.
		local peers=("${others[@]}")
		local k=$((r % ${#peers[@]}))
		local order=("${peers[@]:k}" "${peers[@]:0:k}")
		if ((r % 2)); then order=("${ours[@]}" "${order[@]}"); else order=("${order[@]}" "${ours[@]}"); fi
		for tool in "${order[@]}"; do
			[ -n "$cold" ] && drop_caches
			run_tool "$tool" "$T"
		done
		echo "   round $((r + 1))/$RUNS done" >&2
	done
	local best=999999 bestname=
	declare -A med rss cpu
	for tool in "${tools[@]}"; do
		med[$tool]=$("$TOOL" median $(col 1 "$WORK/t.$tool"))
		cpu[$tool]=$("$TOOL" median $(awk '{print $3 + $4}' "$WORK/t.$tool"))
		rss[$tool]=$(sort -n <(col 2 "$WORK/t.$tool" | tr ' ' '\n' | grep .) | tail -n1)
		case $tool in dupefs-* | floor-*) ;; *)
			if awk -v a="${med[$tool]}" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=${med[$tool]}; bestname=$tool; fi ;;
		esac
	done
	{
		echo
		echo "### $label: $T"
		echo
		echo "| tool | median s | × fastest peer ($bestname) | × jdupes | CPU s (user+sys) | CPU s / $(nproc) CPUs × jdupes | peak RSS MB | runs (s) |"
		echo "|---|---|---|---|---|---|---|---|"
		for tool in "${tools[@]}"; do
			printf '| %s | %.3f | %.2f | %.2f | %.2f | %.2f | %.1f | %s|\n' "$tool" "${med[$tool]}" \
				"$(awk -v a="${med[$tool]}" -v b="$best" 'BEGIN{print a/b}')" \
				"$(awk -v a="${med[$tool]}" -v b="${med[jdupes]}" 'BEGIN{print a/b}')" \
				"${cpu[$tool]}" "$(awk -v a="${cpu[$tool]}" -v n="$(nproc)" -v b="${med[jdupes]}" 'BEGIN{print a/n/b}')" \
				"$(awk -v k="${rss[$tool]}" 'BEGIN{print k/1024}')" "$(col 1 "$WORK/t.$tool")"
		done
		echo
		echo "floor-statwalk is not a peer: it makes only the system calls every re-index must make (open, getdents, close of each folder, fstatat of each entry) on $FLOOR_THREADS threads; its × jdupes is the floor of dupefs-reindex's. CPU s / CPUs is the wall time the same work would take spread perfectly over every CPU."
		[ -z "$cold" ] && echo "floor-sqlite is not a peer: it writes the rows of dupefs-index's index into a new one through dupefs' own write path, each once with its final hash, then builds the indexes, finds the groups and sums the folders, and reads nothing of the tree: the SQLite work alone, on the one writer SQLite allows; its × jdupes is the floor of dupefs-index's (its peak RSS holds the rows it replays)."
		"$BIN" --db "$WORK/bench.db" groups --format fdupes >"$WORK/dupefs.out"
		echo "same duplicate set as jdupes -r: $("$TOOL" compare "$WORK/dupefs.out" "$WORK/jdupes.out" 2>&1)"
	} | tee -a "$RESULTS"
	local x=${cold:+cold}
	x=${x:-warm}
	ratio() { awk -v a="${med[$1]}" -v b="${med[jdupes]}" 'BEGIN{printf "%.2f", a/b}'; }
	case $name in
	real)
		if [ -n "$cold" ]; then
			target "$T cold, first index × jdupes" "$(ratio dupefs-index)" 0.5
		else
			target "$T warm, first index × jdupes (floor-sqlite: $(ratio floor-sqlite))" "$(ratio dupefs-index)" 1.0
			target "$T warm, re-index × jdupes (floor-statwalk: $(ratio floor-statwalk))" "$(ratio dupefs-reindex)" 0.1
			target "$T warm, first index peak RSS MB" "$(awk -v k="${rss[dupefs-index]}" 'BEGIN{printf "%.1f", k/1024}')" 100
		fi ;;
	photos) target "photos $x, first index × jdupes" "$(ratio dupefs-index)" "$([ -n "$cold" ] && echo 0.85 || echo 1.0)" ;;
	esac
}

# sizes N [flat]: the tree of N sparse files of distinct sizes, in folders
# of 100 or (flat) all in one, made once and kept.
sizes() {
	local dir=$WORK/sizes-$1 per=100
	if [ -n "${2:-}" ]; then dir=$WORK/flat-$1 per=0; fi
	if [ ! -f "$dir.done" ]; then
		rm -rf "$dir"
		echo "generating $dir ($1 files of distinct sizes)..." >&2
		"$TOOL" mksizes -dir "$dir" -files "$1" -per-folder "$per"
		touch "$dir.done"
	fi
	echo "$dir"
}

# snapshots N: four hard-linked copies (cp -al) of the generated tree of N
# files, as a backup tool makes them, made once and kept.
snapshots() {
	local src dir=$WORK/snapshots-4x$1
	src=$(tree "gen-$1" "$1" 8192)
	if [ ! -f "$dir.done" ]; then
		rm -rf "$dir"
		mkdir -p "$dir"
		for i in 1 2 3 4; do cp -al "$src" "$dir/s$i"; done
		touch "$dir.done"
	fi
	echo "$dir"
}

# scale: peak RSS of dupefs index at N/10 and N files, on the generated tree
# (a few thousand sizes) and on files whose sizes are all different (what
# the index keeps per size); on four hard-linked snapshots of N/10 files
# (what it keeps per inode, and folder groups down to the leaves); and on
# N/10 files of distinct sizes in one folder (a folder is read whole).
scale() {
	local n=$1 t b flat trees=()
	trees+=("$(tree "scale-$((n / 10))" $((n / 10)) 512)" "$(tree "scale-$n" "$n" 512)")
	trees+=("$(sizes $((n / 10)))" "$(sizes "$n")" "$(snapshots $((n / 10)))")
	flat=$(sizes $((n / 10)) flat)
	trees+=("$flat")
	rm -f "$WORK"/t.*
	# A peak differs by a few MB from run to run: SCALE_RUNS first indexes
	# of each tree, the trees in turn, and their medians; one re-index.
	local r runs=${SCALE_RUNS:-3}
	for ((r = 1; r <= runs; r++)); do
		for t in "${trees[@]}"; do
			rm -f "$WORK"/bench.db*
			timed "scale-$(basename "$t")" "$BIN" --db "$WORK/bench.db" index "$t"
			if [ "$r" = "$runs" ]; then
				timed "scale-$(basename "$t")-again" "$BIN" --db "$WORK/bench.db" index "$t"
			fi
		done
	done
	timed "scale-jdupes-flat" jdupes -r "$flat"
	# jdupes on the generated tree of n small files, beside dupefs' first
	# index of it.
	timed "scale-jdupes-big" sh -c "jdupes -r -q '${trees[1]}' >/dev/null"
	# peakkb FILE: the median peak RSS of the runs in FILE, in KB; mb: in MB.
	peakkb() { "$TOOL" median $(col 2 "$1"); }
	mb() { awk -v k="$(peakkb "$1")" 'BEGIN{printf "%.1f", k/1024}'; }
	{
		echo
		echo "### memory: dupefs index at $((n / 10)) and $n files"
		echo
		echo "First indexes: medians of $runs runs, the trees in turn."
		echo
		echo "| tree | first index s | peak RSS MB | peak RSS of each run MB | re-index s | peak RSS MB |"
		echo "|---|---|---|---|---|---|"
		for t in "${trees[@]}"; do
			b=scale-$(basename "$t")
			printf '| %s | %s | %s | %s | %s | %s |\n' "$(basename "$t")" "$("$TOOL" median $(col 1 "$WORK/t.$b"))" \
				"$(mb "$WORK/t.$b")" "$(awk '{printf "%s%.1f", (NR > 1 ? " " : ""), $2/1024}' "$WORK/t.$b")" \
				"$(col 1 "$WORK/t.$b-again")" "$(mb "$WORK/t.$b-again")"
		done
		printf '| %s, jdupes -r | %s | %s | | | |\n' "$(basename "$flat")" "$(col 1 "$WORK/t.scale-jdupes-flat")" \
			"$(mb "$WORK/t.scale-jdupes-flat")"
		printf '| %s, jdupes -r | %s | %s | | | |\n' "$(basename "${trees[1]}")" "$(col 1 "$WORK/t.scale-jdupes-big")" \
			"$(mb "$WORK/t.scale-jdupes-big")"
	} | tee -a "$RESULTS"
	peaks() {
		awk -v a="$(peakkb "$WORK/t.scale-$1")" -v b="$(peakkb "$WORK/t.scale-$2")" 'BEGIN{printf "%.2f", a/b}'
	}
	target "first index of $n small files × jdupes" "$(awk -v a="$("$TOOL" median $(col 1 "$WORK/t.scale-$(basename "${trees[1]}")"))" \
		-v b="$(col 1 "$WORK/t.scale-jdupes-big")" 'BEGIN{printf "%.2f", a/b}')" 1.0
	target "first index peak RSS at $n files / at $((n / 10))" "$(peaks "tree-scale-$n" "tree-scale-$((n / 10))")" 1.0
	target "the same, files of distinct sizes" "$(peaks "sizes-$n" "sizes-$((n / 10))")" 1.0
}

{
	echo "## $STARTED make bench"
	echo
	echo "Command: \`$COMMAND\`."
	echo "dupefs $("$BIN" --version | awk '{print $NF}' | tr -d ')'), $(nproc) CPUs, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo); $RUNS runs per tool after a warm-up run; medians."
	for p in jdupes rdfind fdupes rmlint; do printf '%s: %s; ' "$p" "$(dpkg-query -W -f '${Version}' "$p" 2>/dev/null || echo '?')"; done
	echo
} | tee "$RESULTS"

ONLY=${ONLY:-}
if [ -z "$ONLY" ] || [ "$ONLY" = index ]; then
	bench "generated" "$(tree "gen-$FILES" "$FILES" 8192)"
	if [ -n "$REAL" ]; then bench "real" "$REAL"; fi
fi
if [ -z "$ONLY" ] || [ "$ONLY" = cold ]; then
	if cold_ok; then
		if [ -n "$REAL" ]; then bench "real" "$REAL" cold; fi
	else
		echo "cold-cache runs need root (to drop the page cache): skipped" | tee -a "$RESULTS"
	fi
fi
if [ "$PHOTOS" != 0 ] && { [ -z "$ONLY" ] || [ "$ONLY" = photos ]; }; then
	P=$(photos "$PHOTOS")
	bench "photos" "$P"
	if cold_ok; then bench "photos" "$P" cold; else echo "cold-cache runs need root: skipped" | tee -a "$RESULTS"; fi
fi
if [ -n "$SCALE" ] && { [ -z "$ONLY" ] || [ "$ONLY" = scale ]; }; then scale "$SCALE"; fi
for extra in "$ROOT"/integration/bench/bench-*.sh; do
	part=$(basename "$extra" .sh)
	part=${part#bench-}
	if [ -z "$ONLY" ] || [ "$ONLY" = "$part" ]; then . "$extra"; fi
done
if [ -f "$TARGETS" ]; then
	{
		echo
		echo "### the speed targets in this run"
		echo
		echo "| figure | this run | target | |"
		echo "|---|---|---|---|"
		while IFS='|' read -r label value limit; do
			printf '| %s | %s | ≤ %s | %s |\n' "$label" "$value" "$limit" \
				"$(awk -v v="$value" -v l="$limit" 'BEGIN{print (v <= l) ? "met" : "not met"}')"
		done <"$TARGETS"
	} | tee -a "$RESULTS"
fi
if [ -s "$FAILED" ]; then
	{
		echo
		echo "### FAILED checks"
		echo
		sed 's/^/- /' "$FAILED"
	} | tee -a "$RESULTS"
fi
# The run goes on the dated log beside the bench, as printed.
if [ -n "$LOG" ]; then
	{
		echo
		cat "$RESULTS"
	} >>"$LOG"
	echo "appended to $LOG" >&2
fi
echo >&2
echo "results: $RESULTS" >&2
if [ -s "$FAILED" ]; then exit 1; fi
