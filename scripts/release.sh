#!/usr/bin/env bash
# release.sh: reproducible release archives of the committed tree.
#
#   scripts/release.sh [OUTDIR]      (make release; OUTDIR defaults to dist)
#
# RELEASE_REV picks the commit (default HEAD).
#
# For linux/amd64 and linux/arm64, a static binary (CGO_ENABLED=0: runs on
# any Linux, everything but the nccl strategy and GPU telemetry), and for
# GPU machines a cgo build (linked against glibc, as Debian 12's or newer;
# loads NCCL, the CUDA runtime and NVML at run time), for arm64 only where
# a cross gcc is installed (Debian: gcc-aarch64-linux-gnu). Each archive
# holds the binary, LICENSE, NOTICE, README.md and CHANGELOG.md; SHA256SUMS
# lists them.
#
# Reproducible: built from a clone of HEAD (so nothing untracked gets in
# and the binary's build info names a clean commit), -trimpath, no build
# id, archive entries sorted with the commit's time as their mtime
# (SOURCE_DATE_EPOCH), owner 0, gzip without a name or time. Two runs of
# the same commit with the same Go give byte-identical archives: `make
# release-check` proves it with the second run's build cache empty.
set -euo pipefail
out="$(realpath -m "${1:-dist}")"
root="$(git rev-parse --show-toplevel)"
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
	echo "release.sh: the working tree has uncommitted changes; the release is built from ${RELEASE_REV:-HEAD} without them" >&2
fi
work="$(mktemp -d /tmp/distbench-release.XXXXXX)"
trap 'rm -rf "$work"' EXIT
rev="$(git -C "$root" rev-parse --verify "${RELEASE_REV:-HEAD}^{commit}")"
git clone -q --no-hardlinks --no-checkout "$root" "$work/distbench"
src="$work/distbench"
cd "$src"
git checkout -q --detach "$rev"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
export GOFLAGS=-trimpath GOTOOLCHAIN=local
# The version Go stamps from the tags (v0.1.0 on a tagged commit, a
# pseudo-version after it), as --version prints it.
version="$(go build -o "$work/probe" ./cmd/distbench && go version -m "$work/probe" | awk '$1 == "mod" { print $3 }')"
case "$version" in "" | "(devel)") version="$(git describe --tags --always)" ;; esac
mkdir -p "$out"
rm -f "$out"/distbench-*.tar.gz "$out/SHA256SUMS"

# archive NAME GOARCH CGO [CC]: build and pack one binary.
archive() {
	local name="$1" arch="$2" cgo="$3" cc="${4:-}" dir="$work/pkg/$1"
	mkdir -p "$dir"
	env GOOS=linux GOARCH="$arch" CGO_ENABLED="$cgo" ${cc:+CC="$cc"} \
		go build -buildvcs=true -ldflags="-buildid=" -o "$dir/distbench" ./cmd/distbench
	# --version must name the commit: never "(devel), commit unknown".
	if ! go version -m "$dir/distbench" | grep -q "vcs.revision=$rev\$"; then
		echo "release.sh: $name: the binary's build info does not name commit $rev" >&2
		exit 1
	fi
	cp LICENSE NOTICE README.md CHANGELOG.md "$dir/"
	touch -d "@$SOURCE_DATE_EPOCH" "$dir" "$dir"/*
	tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=ustar \
		-C "$work/pkg" -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
	echo "release.sh: $out/$name.tar.gz"
}
archive "distbench-$version-linux-amd64" amd64 0
archive "distbench-$version-linux-arm64" arm64 0
archive "distbench-$version-linux-amd64-cgo" amd64 1
if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
	archive "distbench-$version-linux-arm64-cgo" arm64 1 aarch64-linux-gnu-gcc
else
	echo "release.sh: no linux/arm64 cgo build: aarch64-linux-gnu-gcc not found (Debian: apt-get install gcc-aarch64-linux-gnu)" >&2
fi
(cd "$out" && sha256sum distbench-*.tar.gz >SHA256SUMS)
echo "release.sh: $version, commit $(git rev-parse --short=12 HEAD), SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH; checksums in $out/SHA256SUMS"
