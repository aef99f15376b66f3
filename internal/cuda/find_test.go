package cuda

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree makes the files named (relative to a new directory, "~" standing
// for it inside a file's contents) and returns the directory.
func tree(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestCandidates lays out the places GPU machines keep NVIDIA's libraries
// in a fake tree and checks which files the search finds, in which order,
// from where. "~" in env values and wanted paths stands for the tree.
func TestCandidates(t *testing.T) {
	tests := []struct {
		name    string
		lib     Library
		files   []string
		env     map[string]string
		sysPath []string // sys.path of the fake python3, "~"-relative
		want    []string // "path <- from", "~"-relative
	}{
		{
			name:  "override alone, even where it does not exist",
			lib:   CUDART,
			files: []string{"usr/local/cuda/lib64/libcudart.so.13"},
			env:   map[string]string{EnvCUDARTLib: "/elsewhere/libcudart.so"},
			want:  []string{"/elsewhere/libcudart.so <- DISTBENCH_CUDART_LIB"},
		},
		{
			name: "toolkits: CUDA_HOME, /usr/local/cuda, then versions newest first, targets too",
			lib:  CUDART,
			files: []string{
				"opt/mycuda/lib64/libcudart.so.12",
				"usr/local/cuda/lib64/libcudart.so.13",
				"usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12",
				"usr/local/cuda-12.10/lib64/libcudart.so.12",
				"usr/local/cuda-13.0/targets/sbsa-linux/lib/libcudart.so.13",
			},
			env: map[string]string{"CUDA_HOME": "~/opt/mycuda"},
			want: []string{
				"~/opt/mycuda/lib64/libcudart.so.12 <- CUDA toolkit ~/opt/mycuda",
				"~/usr/local/cuda/lib64/libcudart.so.13 <- CUDA toolkit ~/usr/local/cuda",
				"~/usr/local/cuda-13.0/targets/sbsa-linux/lib/libcudart.so.13 <- CUDA toolkit ~/usr/local/cuda-13.0",
				"~/usr/local/cuda-12.10/lib64/libcudart.so.12 <- CUDA toolkit ~/usr/local/cuda-12.10",
				"~/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12 <- CUDA toolkit ~/usr/local/cuda-12.4",
			},
		},
		{
			name:  "a runtime newer than any soname we know, by its glob",
			lib:   CUDART,
			files: []string{"usr/local/cuda/lib64/libcudart.so.14", "usr/local/cuda/lib64/libcudart.so.14.1.7"},
			want: []string{
				"~/usr/local/cuda/lib64/libcudart.so.14.1.7 <- CUDA toolkit ~/usr/local/cuda",
				"~/usr/local/cuda/lib64/libcudart.so.14 <- CUDA toolkit ~/usr/local/cuda",
			},
		},
		{
			name: "a venv's wheels from VIRTUAL_ENV: CUDA 13's nvidia/cu13 before CUDA 12's nvidia/cuda_runtime",
			lib:  CUDART,
			files: []string{
				"venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12",
				"venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13",
			},
			env: map[string]string{"VIRTUAL_ENV": "~/venv"},
			want: []string{
				"~/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13 <- Python environment ~/venv (NVIDIA's wheel)",
				"~/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12 <- Python environment ~/venv (NVIDIA's wheel)",
			},
		},
		{
			name:  "NCCL's wheel in the venv of the python3 on PATH (the GPU machines' /opt/torch/.venv)",
			lib:   NCCL,
			files: []string{"opt/torch/.venv/bin/python3", "opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"},
			env:   map[string]string{"PATH": "/nonexistent:~/opt/torch/.venv/bin"},
			want:  []string{"~/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 <- Python environment ~/opt/torch/.venv (NVIDIA's wheel)"},
		},
		{
			name:    "sys.path of a python3 whose layout says nothing (a pyenv shim), last",
			lib:     NCCL,
			files:   []string{"usr/local/cuda/lib64/libnccl.so.2", "pyenv/site-packages/nvidia/nccl/lib/libnccl.so.2", "shims/python3"},
			env:     map[string]string{"PATH": "~/shims"},
			sysPath: []string{"", "~/pyenv/python312.zip", "~/pyenv/site-packages"},
			want: []string{
				"~/usr/local/cuda/lib64/libnccl.so.2 <- CUDA toolkit ~/usr/local/cuda",
				"~/pyenv/site-packages/nvidia/nccl/lib/libnccl.so.2 <- sys.path ~/pyenv/site-packages (NVIDIA's wheel)",
			},
		},
		{
			name:  "conda's lib, after the toolkits",
			lib:   NCCL,
			files: []string{"conda/lib/libnccl.so.2", "usr/local/cuda/lib64/libnccl.so.2"},
			env:   map[string]string{"CONDA_PREFIX": "~/conda"},
			want: []string{
				"~/usr/local/cuda/lib64/libnccl.so.2 <- CUDA toolkit ~/usr/local/cuda",
				"~/conda/lib/libnccl.so.2 <- conda environment ~/conda",
			},
		},
		{
			name:  "NVML from the driver's directory, never from a toolkit",
			lib:   NVML,
			files: []string{"usr/local/nvidia/lib64/libnvidia-ml.so.1", "usr/local/cuda/lib64/libnvidia-ml.so.1"},
			want:  []string{"~/usr/local/nvidia/lib64/libnvidia-ml.so.1 <- the driver's directory /usr/local/nvidia/lib64"},
		},
		{
			name:  "nothing anywhere",
			lib:   CUDART,
			files: []string{"usr/local/cuda/lib64/libcublas.so.13"},
			want:  nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, tc.files...)
			tilde := func(s string) string { return strings.ReplaceAll(s, "~", root) }
			env := map[string]string{"PATH": "/nonexistent"}
			for k, v := range tc.env {
				env[k] = tilde(v)
			}
			f := Finder{Root: root, NoSystem: true, Getenv: func(k string) string { return env[k] },
				SysPath: func() []string {
					var out []string
					for _, p := range tc.sysPath {
						out = append(out, tilde(p))
					}
					return out
				}}
			var got []string
			for c := range f.Candidates(tc.lib) {
				got = append(got, strings.ReplaceAll(c.Path+" <- "+c.From, root, "~"))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("candidates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// The loader's own search comes first, by soname, newest first; Python
// is asked for its sys.path only when everything before it has failed.
func TestCandidatesOrderAndLaziness(t *testing.T) {
	root := tree(t, "usr/local/cuda/lib64/libcudart.so.13")
	asked := false
	f := Finder{Root: root, Getenv: func(k string) string { return map[string]string{"PATH": "/nonexistent"}[k] },
		SysPath: func() []string { asked = true; return nil }}
	var got []string
	for c := range f.Candidates(CUDART) {
		got = append(got, c.Path)
		if strings.HasPrefix(c.Path, root) {
			break
		}
	}
	want := []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so", root + "/usr/local/cuda/lib64/libcudart.so.13"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if asked {
		t.Error("python3 was asked for sys.path though an earlier candidate was taken")
	}
}

func TestPlaces(t *testing.T) {
	for lib, want := range map[*Library]string{
		&CUDART: "the system's library path, CUDA toolkits or Python environments' NVIDIA wheels",
		&NVML:   "the system's library path or the driver's directories",
	} {
		if got := lib.Places(); got != want {
			t.Errorf("%s: %q, want %q", lib.Name, got, want)
		}
	}
}
