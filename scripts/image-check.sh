#!/usr/bin/env bash
# image-check.sh: build the CPU image (deploy/image/Containerfile) from a
# static binary built here, with no registry, and run a checked allreduce
# in it: 4 ranks through ring and 2 through tree, every row's #wrong 0.
#
#   scripts/image-check.sh            (make image)
#
# With buildah or podman. The run is tried with podman (its own network
# namespace, loopback only), then with buildah's chroot isolation (the
# host's network namespace; where a sandbox refuses podman's rlimits or
# cgroups, as this project's CI machines do); where neither tool is
# installed, or neither can run a container, it says why and exits 0
# (skipped). IMAGE_TAG names the image (default localhost/distbench:check);
# IMAGE_KEEP=1 keeps it.
set -euo pipefail
root="$(git rev-parse --show-toplevel)"
cd "$root"
skip() {
	echo "make image: skipped: $*"
	exit 0
}
if command -v buildah >/dev/null 2>&1; then
	build=(buildah bud --quiet)
elif command -v podman >/dev/null 2>&1; then
	build=(podman build --quiet)
else
	skip "neither buildah nor podman is installed (Debian: apt-get install buildah podman)"
fi
tag="${IMAGE_TAG:-localhost/distbench:check}"
ctx="$(mktemp -d /tmp/distbench-image.XXXXXX)"
ctr=""
cleanup() {
	[ -n "$ctr" ] && buildah rm "$ctr" >/dev/null 2>&1
	[ "${IMAGE_KEEP:-}" = 1 ] || "${build[0]}" rmi "$tag" >/dev/null 2>&1 || true
	rm -rf "$ctx"
}
trap cleanup EXIT

CGO_ENABLED=0 go build -trimpath -buildvcs=auto -o "$ctx/distbench" ./cmd/distbench
cp -r deploy/image/rootfs deploy/image/Containerfile LICENSE NOTICE "$ctx/"
chmod 1777 "$ctx/rootfs/tmp"
rm -f "$ctx/rootfs/tmp/.keep"
if ! out=$("${build[@]}" -f "$ctx/Containerfile" -t "$tag" "$ctx" 2>&1); then
	echo "$out" >&2
	case "$out" in
	*"user namespace"* | *"newuidmap"* | *"Operation not permitted"* | *"permission denied"*)
		skip "${build[0]} cannot build images here: $(echo "$out" | tail -1)" ;;
	esac
	echo "make image: ${build[*]} failed" >&2
	exit 1
fi
echo "make image: built $tag ($(du -k "$ctx/distbench" | cut -f1) KiB binary) with ${build[0]}"

# runner ARGS...: distbench ARGS in the image, by whichever way runs here.
how=""
runner() {
	case "$how" in
	podman) podman run --rm --network=none "$tag" "$@" ;;
	buildah) buildah run --isolation chroot "$ctr" -- /usr/local/bin/distbench "$@" ;;
	esac
}
why=()
if command -v podman >/dev/null 2>&1; then
	if err=$(podman run --rm --network=none "$tag" version 2>&1); then
		how=podman
	else
		why+=("podman run: $(echo "$err" | tail -1)")
	fi
fi
if [ -z "$how" ] && command -v buildah >/dev/null 2>&1; then
	if ctr=$(buildah from "$tag" 2>&1) && err=$(buildah run --isolation chroot "$ctr" -- /usr/local/bin/distbench version 2>&1); then
		how=buildah
	else
		why+=("buildah run: $(echo "${err:-$ctr}" | tail -1)")
		ctr=""
	fi
fi
[ -n "$how" ] || skip "no container could run here: ${why[*]}"
[ ${#why[@]} -eq 0 ] || echo "make image: ${why[*]}; running with buildah's chroot isolation instead"
echo "make image: $(runner version)"

# check ARGS...: a checked run in the image; every row's #wrong (the
# columns after each busbw) must be 0, and so must the out-of-bounds count.
check() {
	local out
	if ! out=$(runner run "$@" --iters 5 --warmup 1 --timeout 2m 2>&1); then
		echo "$out" >&2
		echo "make image: distbench run $* failed in the image" >&2
		exit 1
	fi
	if ! grep -q '^# Out of bounds values : 0 OK' <<<"$out"; then
		echo "$out" >&2
		echo "make image: distbench run $* in the image: wrong values" >&2
		exit 1
	fi
	rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +(float|int32)' <<<"$out" || true)
	echo "make image: distbench run $*: $rows rows checked, 0 wrong"
}
check --np 4 --strategy ring --collective allreduce -b 4KiB -e 1MiB -f 16 --dtype float32
check --np 2 --strategy tree --collective allreduce -b 8 -e 64KiB -f 64 --dtype int32
echo "make image: ok: the CPU image ran checked allreduces ($how)"
