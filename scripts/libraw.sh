#!/usr/bin/env bash
# libraw.sh builds the LibRaw that rawbatch links by default: LibRaw 0.21.4
# from Debian's source package (trixie), as the thread-safe static library
# libraw_r.a (OpenMP, zlib for deflate DNG, libjpeg for lossy DNG), plus the
# sample programs dcraw_emu and raw-identify that the tests use as oracles,
# all linked against that same libraw_r.a.
#
#   scripts/libraw.sh build   fetch, check and build into build/libraw-0.21.4/
#                             (nothing to do when already built); when the
#                             source cannot be fetched, print one notice and
#                             leave the system LibRaw in use (an error when
#                             CI is set)
#   scripts/libraw.sh env     print the environment (PKG_CONFIG_PATH, PATH,
#                             RAWBATCH_LIBRAW) that makes `go build` and
#                             `go test` use the bundled build; nothing when
#                             it is not built or LIBRAW=system
#
# The tarball is fetched with apt through a temporary deb-src entry for
# trixie that reuses the Debian mirror of the machine's own apt sources, in
# a private apt state directory (the system's apt lists are not touched).
# Only libraw_0.21.4.orig.tar.gz is used (Debian's .dsc may be missing); it
# must match the SHA-256 below.
set -euo pipefail

VERSION=0.21.4
TARBALL=libraw_${VERSION}.orig.tar.gz
SHA256=8baeb5253c746441fadad62e9c5c43ff4e414e41b0c45d6dcabccb542b2dff4b
SUITE=trixie

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
dir=$build/libraw-$VERSION
stamp=$dir/.rawbatch-built

# Compiler flags of the library and the oracles: OpenMP, zlib (deflate
# DNG), libjpeg with the jpeg_mem_src API (lossy DNG).
CFLAGS_LR="-O3 -I. -w -fopenmp -DUSE_ZLIB -DUSE_JPEG -DUSE_JPEG8"
LIBS_LR="-ljpeg -lz -lm -lpthread"

say() { echo "libraw.sh: $*" >&2; }

# mirror prints the first Debian mirror URI of the system's apt sources
# (deb822 .sources files, then one-line sources.list entries), skipping
# security mirrors.
mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk 'tolower($1)=="uris:" { for (i = 2; i <= NF; i++) print $i }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		awk '$1=="deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { print $i; break } }' "$f"
	done
} 2>/dev/null

debian_mirror() {
	mirror | grep -v -e security -e '^cdrom:' | grep '/debian/\?$' | head -n 1
}

# fetch downloads the tarball into $build with apt-get source; it returns 2
# when the source is not available (no apt, no Debian mirror, download
# failed), after setting $why.
fetch() {
	command -v apt-get >/dev/null || { why="apt-get not found (not a Debian-based system)"; return 2; }
	local m
	m=$(debian_mirror || true)
	[ -n "$m" ] || { why="no Debian mirror in the apt sources"; return 2; }
	local tmp
	tmp=$(mktemp -d "$build/apt.XXXXXX")
	mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
	echo "deb-src $m $SUITE main" >"$tmp/sources.list"
	local opts=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o "Dir::Etc::SourceParts=$tmp/none"
		-o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o Debug::NoLocking=1
		-o APT::Sandbox::User=root -q)
	say "fetching $TARBALL with apt-get source libraw/$SUITE"
	if ! apt-get "${opts[@]}" update >"$tmp/apt.log" 2>&1; then
		why="apt-get update for deb-src $SUITE failed (see $tmp/apt.log)"
		return 2
	fi
	# The .dsc may be missing on the mirror: apt-get then fails after
	# downloading the tarball, which is all that is used.
	(cd "$tmp" && apt-get "${opts[@]}" source --download-only "libraw/$SUITE" >>apt.log 2>&1) || true
	if [ ! -f "$tmp/$TARBALL" ]; then
		why="apt-get source libraw/$SUITE did not download $TARBALL (see $tmp/apt.log)"
		return 2
	fi
	mv "$tmp/$TARBALL" "$build/$TARBALL"
	rm -rf "$tmp"
}

do_build() {
	if [ "${LIBRAW:-bundled}" = system ]; then
		return 0
	fi
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$SHA256" ]; then
		return 0
	fi
	mkdir -p "$build"
	if [ ! -f "$build/$TARBALL" ]; then
		why=
		fetch || {
			rc=$?
			[ $rc -eq 2 ] || exit $rc
			if [ -n "${CI:-}" ]; then
				say "error: cannot fetch LibRaw $VERSION: $why (CI does not fall back to the system LibRaw)"
				exit 1
			fi
			say "notice: cannot fetch LibRaw $VERSION ($why); using the system LibRaw $(pkg-config --modversion libraw_r 2>/dev/null || echo '(not installed)'), which may not decode lossy CR3, Sony lossless ARW or cameras since 2020"
			return 0
		}
	fi
	local got
	got=$(sha256sum "$build/$TARBALL" | cut -d' ' -f1)
	if [ "$got" != "$SHA256" ]; then
		mv "$build/$TARBALL" "$build/$TARBALL.bad"
		say "error: $build/$TARBALL has SHA-256 $got, expected $SHA256 (pinned in scripts/libraw.sh); moved aside to $TARBALL.bad"
		exit 1
	fi
	local start=$SECONDS
	say "building LibRaw $VERSION (libraw_r.a, dcraw_emu, raw-identify) in $dir"
	rm -rf "$dir" "$dir.tmp"
	mkdir -p "$dir.tmp"
	tar -xzf "$build/$TARBALL" -C "$dir.tmp" --strip-components=1
	local jobs
	jobs=$(nproc 2>/dev/null || echo 2)
	make -C "$dir.tmp" -f Makefile.dist -j"$jobs" lib/libraw_r.a CFLAGS="$CFLAGS_LR" >"$dir.tmp/build.log" 2>&1 ||
		{ tail -n 20 "$dir.tmp/build.log" >&2; say "error: building LibRaw failed (log: $dir.tmp/build.log)"; exit 1; }
	local p
	for p in dcraw_emu raw-identify; do
		(cd "$dir.tmp" && g++ $CFLAGS_LR -pthread -o "bin/$p" "samples/$p.cpp" -L./lib -lraw_r $LIBS_LR) >>"$dir.tmp/build.log" 2>&1 ||
			{ tail -n 20 "$dir.tmp/build.log" >&2; say "error: building $p failed"; exit 1; }
	done
	rm -f "$dir.tmp"/object/*.o
	mkdir -p "$dir.tmp/pkgconfig"
	# The .pc replaces the system's libraw_r for cgo: the static library
	# (the lib directory holds no .so), and RB_LIBRAW_BUNDLED tells the
	# binding that it is linked statically.
	cat >"$dir.tmp/pkgconfig/libraw_r.pc" <<PC
prefix=$dir
Name: libraw_r
Description: LibRaw $VERSION, thread-safe static build bundled by rawbatch
Version: $VERSION
Cflags: -I\${prefix} -DRB_LIBRAW_BUNDLED=1
Libs: -L\${prefix}/lib -lraw_r $LIBS_LR -lstdc++
PC
	echo "$SHA256" >"$dir.tmp/.rawbatch-built"
	mv "$dir.tmp" "$dir"
	say "built LibRaw $VERSION in $((SECONDS - start)) s"
}

do_env() {
	if [ "${LIBRAW:-bundled}" = system ] || [ ! -f "$stamp" ]; then
		return 0
	fi
	# CGO_CPPFLAGS repeats the define of libraw_r.pc, and CGO_LDFLAGS its
	# library directory, because Go's build cache keys on them but not on
	# pkg-config's output: without the define a system build could reuse
	# the bundled build's cached package, or the reverse; without the
	# directory a -trimpath build (whose key leaves out the source
	# directory) in one checkout could reuse another checkout's package
	# and link against that checkout's library, or a missing one.
	# (The output is split into words by `env $(scripts/libraw.sh env)`: a
	# CGO_LDFLAGS of the caller's own, which may hold several words, is
	# left as it is in the environment rather than printed.)
	ld=
	if [ -z "${CGO_LDFLAGS:-}" ] || [ "$CGO_LDFLAGS" = "-L$dir/lib" ]; then
		ld=" CGO_LDFLAGS=-L$dir/lib"
	fi
	echo "PKG_CONFIG_PATH=$dir/pkgconfig PATH=$dir/bin:$PATH RAWBATCH_LIBRAW=bundled CGO_CPPFLAGS=-DRB_LIBRAW_BUNDLED=1${CGO_CPPFLAGS:+ $CGO_CPPFLAGS}$ld"
}

case "${1:-}" in
build) do_build ;;
env) do_env ;;
*)
	echo "usage: scripts/libraw.sh build|env" >&2
	exit 2
	;;
esac
