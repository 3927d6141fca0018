#!/bin/sh
# peers.sh: the side-by-side benchmark of rawbatch and other RAW converters
# (docs/performance.md).
#
# The same inputs go to full-size JPEG quality 90 through each peer in one
# timed command per input set: the realistic 6000x4000 files of
# scripts/realset.go (three by default, lossless JPEG DNGs and Sony lossless
# ARWs at ISO 1600 with a known lens and an embedded preview; the set the
# wall-time target, no slower than dcraw_emu, is about; cached in
# build/realset-vN) and, separately, the real files in testdata/raw:
#   rawbatch     rawbatch convert IN -o OUT --quality 90 (defaults otherwise)
#   dcraw_emu    dcraw_emu -w -q 3 -Z - F | cjpeg -quality 90, xargs -P$(nproc)
#   rawtherapee  rawtherapee-cli -o OUT -j90 -js1 -c FILES
#   darktable    darktable-cli F OUT/F.jpg --core --configdir TMP (quality 90)
# Rounds are interleaved (round 1: every peer on each set, round 2: every
# peer on each set, ...); each set gets a table of its own.
# Each run is measured with GNU time (wall, user+sys of the process tree,
# max RSS of the largest process) and, where a memory cgroup (v1) can be
# created, the peak of the whole tree (memory.max_usage_in_bytes, which
# counts page cache too). The medians and the ratios to rawbatch are
# printed and, with PEERS_DOC=FILE, written into FILE between the markers
# <!-- peers:begin --> and <!-- peers:end -->.
#
# A peer that is missing is installed with apt-get; one that cannot be
# installed is skipped with a line saying so.
#
# Environment: PEERS_ROUNDS (default 3), PEERS_DOC (docs/performance.md to
# update it), PEERS_ONLY (space-separated subset of peers), PEERS_REALSET
# (number of realistic 24 MP files, default 3; 0 for none),
# PEERS_DARKTABLE_REAL_ONLY=1 (darktable is timed on the real set only).
set -eu

# run_peer PEER IN OUT: PEER converts every file of IN into OUT (the timed
# command).
run_peer() {
	p=$1 in=$2 out=$3
	case $p in
	rawbatch)
		# A fresh stage cache folder: an entry the user kept would be a hit.
		rm -rf "$work/cache" && "$work/rawbatch" convert "$in" -o "$out" --quality 90 --cache-dir "$work/cache" ;;
	dcraw_emu)
		ls "$in" | xargs -P"$nproc" -I{} sh -c 'dcraw_emu -w -q 3 -Z - "$1/$2" | cjpeg -quality 90 > "$3/$2.jpg"' _ "$in" {} "$out" ;;
	rawtherapee)
		rawtherapee-cli -o "$out" -j90 -js1 -c "$in"/* ;;
	darktable)
		rm -rf "$work/dtconf"
		failed=0
		for f in "$in"/*; do
			darktable-cli "$f" "$out/$(basename "$f").jpg" --core --configdir "$work/dtconf" \
				--conf plugins/imageio/format/jpeg/quality=90 || failed=1
		done
		return $failed ;;
	esac
}

# The timed child: scripts/peers.sh --run CGROUP PEER IN OUT.
if [ "${1:-}" = --run ]; then
	[ -n "$2" ] && echo $$ >"$2/cgroup.procs"
	run_peer "$3" "$4" "$5"
	exit
fi

script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."
root=$(pwd)
rounds=${PEERS_ROUNDS:-3}
peers=${PEERS_ONLY:-"rawbatch dcraw_emu rawtherapee darktable"}
nproc=$(nproc)
nrealset=${PEERS_REALSET:-3}
load=$(cut -d' ' -f1-3 /proc/loadavg | sed 's/ /, /g')

work=$(mktemp -d "${TMPDIR:-/tmp}/rawbatch-peers.XXXXXX")
cg=
cleanup() {
	[ -n "$cg" ] && [ -d "$cg" ] && rmdir "$cg" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

say() { printf '%s\n' "peers: $*" >&2; }

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
apt_updated=
# need CMD PKG: CMD is on PATH after installing PKG if it was missing.
need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	say "$1 missing: apt-get install -y $2"
	if [ -z "$apt_updated" ]; then
		$SUDO apt-get update -qq >/dev/null 2>&1 || true
		apt_updated=1
	fi
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >"$work/apt-$2.log" 2>&1 || true
	command -v "$1" >/dev/null 2>&1
}

need /usr/bin/time time || { say "GNU time cannot be installed: no measurements"; exit 1; }

# The inputs: the set "realistic" (PEERS_REALSET realistic 24 MP files,
# copied from the cache) and the set "real".
realsetin=$work/in-realistic
realin=$work/in-real
mkdir -p "$realsetin" "$realin"
sets=
if [ "$nrealset" -gt 0 ]; then
	say "the realistic set: $nrealset 24 MP files (written into build/ unless cached)"
	env $(scripts/libraw.sh env) go run ./scripts/realset.go "$nrealset" >"$work/realset"
	while read -r f; do cp "$f" "$realsetin/"; done <"$work/realset"
	sets=realistic
fi
cp testdata/raw/* "$realin/"
nreal=$(ls "$realin" | wc -l)
sets="$sets real"

say "building rawbatch"
# The AVX2 kernels need Go's SIMD support, as the Makefile builds it.
export GOEXPERIMENT="${GOEXPERIMENT:-simd}"
env $(scripts/libraw.sh env) go build -trimpath -o "$work/rawbatch" ./cmd/rawbatch

# Which peers run.
active=
for p in $peers; do
	case $p in
	rawbatch) ok=1 ;;
	dcraw_emu) ok=1; { need dcraw_emu libraw-bin && need cjpeg libjpeg-turbo-progs; } || ok= ;;
	rawtherapee) ok=1; need rawtherapee-cli rawtherapee || ok= ;;
	darktable) ok=1; need darktable-cli darktable || ok= ;;
	*) say "unknown peer $p"; exit 2 ;;
	esac
	if [ -n "$ok" ]; then active="$active $p"; else say "skipping $p: it cannot be installed"; fi
done

# A memory cgroup (v1) for the tree's peak, if one can be made.
if [ -w /sys/fs/cgroup/memory ] && mkdir "/sys/fs/cgroup/memory/rawbatch-peers-$$" 2>/dev/null; then
	cg=/sys/fs/cgroup/memory/rawbatch-peers-$$
fi

results=$work/results
for set in $sets; do : >"$results.$set"; done
r=1
while [ "$r" -le "$rounds" ]; do
	for p in $active; do
	for set in $sets; do
		if [ "$set" = realistic ] && [ "$p" = darktable ] && [ "${PEERS_DARKTABLE_REAL_ONLY:-}" = 1 ]; then
			continue
		fi
		in=$realsetin
		[ "$set" = real ] && in=$realin
		out=$work/out-$p-$set-$r
		rm -rf "$out"
		mkdir -p "$out"
		# Cold page cache is not attempted; every peer reads the same warm inputs.
		sync
		tree=0
		if [ -n "$cg" ]; then
			echo 0 >"$cg/memory.max_usage_in_bytes" 2>/dev/null || true
		fi
		export work nproc
		status=0
		/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$script" --run "$cg" "$p" "$in" "$out" >"$out.log" 2>&1 || status=$?
		if [ "$status" -ne 0 ]; then
			say "round $r $p failed (status $status):"
			tail -n 5 "$out.log" >&2
		fi
		if [ -n "$cg" ]; then
			tree=$(($(cat "$cg/memory.max_usage_in_bytes") / 1024))
		fi
		n=$(find "$out" -name '*.jpg' -size +0 | wc -l)
		set -- $(tail -n 1 "$work/time")
		cpu=$(echo "$2 $3" | awk '{printf "%.2f", $1 + $2}')
		say "round $r $p $set: status $status, $n JPEGs, wall $1 s, cpu $cpu s, max RSS $4 KiB, tree peak $tree KiB"
		echo "$p $r $1 $cpu $4 $tree $n $status" >>"$results.$set"
		rm -rf "$out" "$out.log"
	done
	done
	r=$((r + 1))
done

# table RESULTS: the medians of one set's runs and the ratios to rawbatch.
table() {
awk -v rounds="$rounds" '
function median(list,   n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{
	if (!($1 in seen)) { seen[$1] = 1; order[++np] = $1 }
	wall[$1] = wall[$1] " " $3; cpu[$1] = cpu[$1] " " $4
	rss[$1] = rss[$1] " " $5; tree[$1] = tree[$1] " " $6
	if (!($1 in files) || $7 < files[$1]) files[$1] = $7; if ($8 != 0) failed[$1]++
}
END {
	base = "rawbatch"
	if (base in seen) { bw = median(wall[base]); bc = median(cpu[base]); br = median(rss[base]); bt = median(tree[base]) }
	print "| peer | JPEGs (fewest of a round) | wall s | CPU s | max RSS MiB | tree peak MiB | wall × | CPU × | RSS × | tree × |"
	print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for (i = 1; i <= np; i++) {
		p = order[i]
		w = median(wall[p]); c = median(cpu[p]); r = median(rss[p]); t = median(tree[p])
		name = p; if (p in failed) name = p " (" failed[p] " runs exited non-zero)"
		if (bw > 0) printf "| %s | %d | %.1f | %.1f | %.0f | %.0f | %.2f | %.2f | %.2f | %s |\n", name, files[p], w, c, r / 1024, t / 1024, w / bw, c / bc, r / br, (bt > 0 ? sprintf("%.2f", t / bt) : "-")
		else printf "| %s | %d | %.1f | %.1f | %.0f | %.0f | - | - | - | - |\n", name, files[p], w, c, r / 1024, t / 1024
	}
}' "$1"
}

{
	echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -srm), $nproc CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), load before the run $load; $rounds interleaved rounds, each peer timed on each input set in one command."
	[ "${PEERS_DARKTABLE_REAL_ONLY:-}" = 1 ] && echo "darktable converted the real files only."
	for set in $sets; do
		echo
		if [ "$set" = realistic ]; then
			echo "**$nrealset realistic 6000×4000 files** (scripts/realset.go: lossless JPEG DNGs and Sony lossless ARWs, ISO 1600, lens profile, embedded preview; the wall-time target):"
		else
			echo "**The $nreal files of testdata/raw** (real cameras and Adobe DNG SDK samples, 0.04 to 3.2 MP):"
		fi
		echo
		table "$results.$set"
	done
} >"$work/section"
cat "$work/section"

if [ -n "${PEERS_DOC:-}" ]; then
	doc=$PEERS_DOC
	if ! grep -q '<!-- peers:begin -->' "$doc" 2>/dev/null; then
		say "$doc has no <!-- peers:begin --> marker: not updated"
		exit 1
	fi
	awk -v sect="$work/section" '
		/<!-- peers:end -->/ { skip = 0 }
		!skip { print }
		/<!-- peers:begin -->/ { while ((getline l < sect) > 0) print l; skip = 1 }
	' "$doc" >"$work/doc" && cat "$work/doc" >"$doc"
	say "wrote the table into $doc"
fi
