package cuda

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Library is one of NVIDIA's shared libraries that distbench loads at run
// time, and where machines keep it. The places follow NVIDIA's own
// cuda-pathfinder (its descriptor catalog) and torch's loader
// (_preload_cuda_deps: nvidia/<lib>/lib under each of sys.path).
type Library struct {
	Name    string   // for messages: "the CUDA runtime", "NCCL"
	Env     string   // names a file to load instead of searching; "" for none
	Sonames []string // newest first; bare names go to the dynamic loader's own search
	Glob    string   // other versions in a directory (a CUDA 14's runtime, say)
	Toolkit bool     // shipped in CUDA toolkits' lib64, lib and targets/*/lib
	Driver  bool     // part of the driver: searched where drivers are mounted
	Wheels  []string // directories under a Python environment's site-packages
}

// The libraries, with NVIDIA's wheel layouts: CUDA 12's one package per
// library (nvidia/cuda_runtime/lib) and CUDA 13's shared nvidia/cu13/lib.
var (
	CUDART = Library{Name: "the CUDA runtime", Env: EnvCUDARTLib,
		Sonames: []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"},
		Glob:    "libcudart.so.[0-9]*", Toolkit: true,
		Wheels: []string{"nvidia/cu13/lib", "nvidia/cuda_runtime/lib"}}
	NCCL = Library{Name: "NCCL", Env: EnvNCCLLib, Sonames: []string{"libnccl.so.2"}, Toolkit: true,
		Wheels: []string{"nvidia/nccl/lib"}}
	Driver = Library{Name: "the CUDA driver", Sonames: []string{"libcuda.so.1"}, Driver: true}
	NVML   = Library{Name: "NVML", Env: EnvNVMLLib, Sonames: []string{"libnvidia-ml.so.1"}, Driver: true}
)

// The variables that name a library to load instead of searching for one.
const (
	EnvCUDARTLib = "DISTBENCH_CUDART_LIB"
	EnvNCCLLib   = "DISTBENCH_NCCL_LIB"
	EnvNVMLLib   = "DISTBENCH_NVML_LIB"
)

// driverDirs are where drivers put their libraries outside the loader's
// default path: container runtimes' mount (the GPU machines lent to this
// project keep theirs in /usr/local/nvidia), Debian's alternatives, RHEL's,
// WSL's, the GPU operator's.
var driverDirs = []string{"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
	"/usr/lib/x86_64-linux-gnu/nvidia/current", "/usr/lib64/nvidia", "/usr/lib/wsl/lib",
	"/run/nvidia/driver/usr/lib/x86_64-linux-gnu", "/run/nvidia/driver/usr/lib64"}

// Candidate is one file to try, and where it was found.
type Candidate struct {
	Path string // a file, or a bare soname for the dynamic loader's own search
	From string // where: "DISTBENCH_CUDART_LIB", "the system's library path", "CUDA toolkit /usr/local/cuda-13.0", ...
}

// SystemPath is Candidate.From for a bare soname.
const SystemPath = "the system's library path"

// Finder lists the candidates for a library, in order: the override
// variable alone when it is set (an explicit choice is never second-guessed);
// else the dynamic loader's own search (LD_LIBRARY_PATH, the ldconfig cache,
// the default directories), the driver's directories, CUDA toolkits
// (CUDA_HOME, CUDA_PATH, /usr/local/cuda, /usr/local/cuda-*, newest first),
// a conda environment's lib, and last the NVIDIA wheels of Python
// environments: VIRTUAL_ENV's, CONDA_PREFIX's, that of each python on PATH,
// and, only if all of those fail, each directory of sys.path of the
// python3 on PATH, which it asks (as torch's loader walks sys.path).
type Finder struct {
	Getenv   func(string) string // os.Getenv if nil
	Root     string              // prefixed to the fixed system directories; "" in use, a fake tree in tests
	NoSystem bool                // skip bare sonames (tests, whose answer must not depend on this machine)
	// SysPath returns sys.path of the python on PATH; nil asks python3.
	SysPath func() []string
}

func (f Finder) getenv(k string) string {
	if f.Getenv == nil {
		return os.Getenv(k)
	}
	return f.Getenv(k)
}

// Key changes when anything the candidates depend on does, so a loader can
// tell that it must search again (tests change the environment).
func (f Finder) Key(lib Library) string {
	vars := []string{lib.Env, "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "VIRTUAL_ENV", "PATH"}
	var b strings.Builder
	for _, v := range vars {
		if v != "" {
			b.WriteString(f.getenv(v))
		}
		b.WriteByte(0)
	}
	return b.String()
}

// Override is the file lib's variable names, or "".
func (f Finder) Override(lib Library) string {
	if lib.Env == "" {
		return ""
	}
	return strings.TrimSpace(f.getenv(lib.Env))
}

// Candidates yields lib's candidates in order, each path once; the later
// places are looked at only if the caller asks for more.
func (f Finder) Candidates(lib Library) iter.Seq[Candidate] {
	return func(yield func(Candidate) bool) {
		if p := f.Override(lib); p != "" {
			yield(Candidate{Path: p, From: lib.Env})
			return
		}
		seen := map[string]bool{}
		emit := func(c Candidate) bool {
			if seen[c.Path] {
				return true
			}
			seen[c.Path] = true
			return yield(c)
		}
		// inDir yields the library's files in dir: its sonames, then other
		// versions, newest first.
		inDir := func(dir, from string) bool {
			for _, so := range lib.Sonames {
				if p := filepath.Join(dir, so); isFile(p) && !emit(Candidate{p, from}) {
					return false
				}
			}
			if lib.Glob != "" {
				ms, _ := filepath.Glob(filepath.Join(dir, lib.Glob))
				slices.SortFunc(ms, func(a, b string) int { return compareVersions(b, a) })
				for _, p := range ms {
					if isFile(p) && !emit(Candidate{p, from}) {
						return false
					}
				}
			}
			return true
		}
		if !f.NoSystem {
			for _, so := range lib.Sonames {
				if !emit(Candidate{so, SystemPath}) {
					return
				}
			}
		}
		if lib.Driver {
			for _, d := range driverDirs {
				if !inDir(f.Root+d, "the driver's directory "+d) {
					return
				}
			}
		}
		if lib.Toolkit {
			for _, home := range f.toolkits() {
				for _, dir := range toolkitLibDirs(home) {
					if !inDir(dir, "CUDA toolkit "+home) {
						return
					}
				}
			}
			if p := f.getenv("CONDA_PREFIX"); p != "" && !inDir(filepath.Join(p, "lib"), "conda environment "+p) {
				return
			}
		}
		if len(lib.Wheels) == 0 {
			return
		}
		wheels := func(sites []site) bool {
			for _, s := range sites {
				for _, w := range lib.Wheels {
					if !inDir(filepath.Join(s.dir, w), s.env+" (NVIDIA's wheel)") {
						return false
					}
				}
			}
			return true
		}
		if !wheels(f.pythonEnvs()) {
			return
		}
		wheels(f.sysPath())
	}
}

// NotFoundError is a library none of whose candidates opens.
type NotFoundError struct {
	Library  Library
	Override string // the file the variable named, if it did
	Detail   string // the dynamic loader's message about the first candidate
}

func (e *NotFoundError) Error() string {
	if e.Override != "" {
		return fmt.Sprintf("%s (%s) not found", e.Library.Name, e.Override)
	}
	return fmt.Sprintf("%s (%s) not found in %s", e.Library.Name, strings.Join(e.Library.Sonames, ", "), e.Library.Places())
}

// Places says where lib is looked for, for a message.
func (lib Library) Places() string {
	var p []string
	p = append(p, SystemPath)
	if lib.Driver {
		p = append(p, "the driver's directories")
	}
	if lib.Toolkit {
		p = append(p, "CUDA toolkits")
	}
	if len(lib.Wheels) > 0 {
		p = append(p, "Python environments' NVIDIA wheels")
	}
	if len(p) > 1 {
		return strings.Join(p[:len(p)-1], ", ") + " or " + p[len(p)-1]
	}
	return p[0]
}

// toolkits are the CUDA toolkit directories to search, each once:
// CUDA_HOME, CUDA_PATH, /usr/local/cuda, then every /usr/local/cuda-X.Y,
// newest first, and /opt/cuda.
func (f Finder) toolkits() []string {
	var out []string
	add := func(d string) {
		if d != "" && isDir(d) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	add(f.getenv("CUDA_HOME"))
	add(f.getenv("CUDA_PATH"))
	add(f.Root + "/usr/local/cuda")
	vs, _ := filepath.Glob(f.Root + "/usr/local/cuda-*")
	slices.SortFunc(vs, func(a, b string) int { return compareVersions(b, a) })
	for _, d := range vs {
		add(d)
	}
	add(f.Root + "/opt/cuda")
	return out
}

// toolkitLibDirs are a toolkit's library directories: lib64 (a link to
// targets/<arch>/lib in NVIDIA's packages), lib (conda's layout) and the
// targets themselves, for a toolkit installed without the links.
func toolkitLibDirs(home string) []string {
	dirs := []string{filepath.Join(home, "lib64"), filepath.Join(home, "lib")}
	ts, _ := filepath.Glob(filepath.Join(home, "targets", "*", "lib"))
	slices.Sort(ts)
	return append(dirs, ts...)
}

// site is a site-packages directory and, for messages, the environment it
// belongs to.
type site struct{ dir, env string }

// pythonEnvs are the site-packages of the environments the variables and
// PATH point at, found from their layout without running Python:
// VIRTUAL_ENV, CONDA_PREFIX, and for each python3 or python on PATH the
// prefix above its bin (a venv's, which holds pyvenv.cfg, or an
// installation's such as /usr/local).
func (f Finder) pythonEnvs() []site {
	var prefixes []string
	add := func(p string) {
		if p != "" && !slices.Contains(prefixes, p) {
			prefixes = append(prefixes, p)
		}
	}
	add(f.getenv("VIRTUAL_ENV"))
	add(f.getenv("CONDA_PREFIX"))
	for _, dir := range filepath.SplitList(f.getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		for _, exe := range []string{"python3", "python"} {
			if isFile(filepath.Join(dir, exe)) && filepath.Base(dir) == "bin" {
				add(filepath.Dir(dir))
			}
		}
	}
	var out []site
	for _, p := range prefixes {
		for _, pat := range []string{"lib/python3*/site-packages", "lib64/python3*/site-packages", "lib/python3*/dist-packages", "local/lib/python3*/dist-packages"} {
			ms, _ := filepath.Glob(filepath.Join(p, pat))
			slices.SortFunc(ms, func(a, b string) int { return compareVersions(b, a) })
			for _, m := range ms {
				out = append(out, site{m, "Python environment " + p})
			}
		}
	}
	return out
}

// sysPath is sys.path of the python3 on PATH (a pyenv shim, say, whose
// layout tells nothing), each directory an environment of its own.
func (f Finder) sysPath() []site {
	var dirs []string
	if f.SysPath != nil {
		dirs = f.SysPath()
	} else {
		dirs = askPython()
	}
	out := make([]site, 0, len(dirs))
	for _, d := range dirs {
		if filepath.IsAbs(d) && isDir(d) {
			out = append(out, site{d, "sys.path " + d})
		}
	}
	return out
}

// askedPython memoises askPython per python3 found: its sys.path does not
// change while distbench runs, and a search that fails (no NCCL on this
// machine) is made again by every strategies listing and plan check.
var askedPython sync.Map // path of python3 -> []string

// askPython runs python3 for its sys.path, within a deadline (a cold
// interpreter on a busy machine can take seconds; one that hangs must not
// hang the search). None, where there is no python3.
func askPython() []string {
	exe, err := exec.LookPath("python3")
	if err != nil {
		return nil
	}
	if dirs, ok := askedPython.Load(exe); ok {
		return dirs.([]string)
	}
	dirs := runPython(exe)
	askedPython.Store(exe, dirs)
	return dirs
}

func runPython(exe string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-c", "import sys\nfor p in sys.path:\n    print(p)")
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var dirs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if d := strings.TrimSpace(sc.Text()); d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// compareVersions orders paths by the numbers in them (cuda-12.10 after
// cuda-12.9, libcudart.so.13 after .so.12), then by name.
func compareVersions(a, b string) int {
	na, nb := numbers(a), numbers(b)
	if c := slices.Compare(na, nb); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func numbers(s string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
