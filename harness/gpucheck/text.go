package gpucheck

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteText prints the report for people: a line per library (what, from
// where, which version), the GPUs, the placement, then "missing:" and one
// line per problem.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	const col = "%-21s "
	lib := func(l Lib, extra string) {
		fmt.Fprintf(&b, col, l.Name)
		switch {
		case l.Path == "" && slices.Contains(r.Problems, l.Err):
			b.WriteString("not loaded (see below)\n")
			return
		case l.Path == "" && l.Err != "":
			b.WriteString("not loaded: " + l.Err + "\n")
			return
		case l.Path == "":
			b.WriteString("not loaded\n")
			return
		}
		b.WriteString(l.Path)
		if l.Version != "" {
			b.WriteString(" (" + strings.TrimSpace(extra+" "+l.Version) + ")")
		}
		b.WriteString("\n")
		if l.From != "" {
			fmt.Fprintf(&b, col+"  found in %s\n", "", l.From)
		}
	}
	lib(r.Runtime, "")
	lib(r.Driver, "CUDA")
	lib(r.NCCL, "")
	nvml := r.NVML
	if r.DriverVersion != "" && nvml.Path != "" {
		nvml.Version = strings.TrimSpace(nvml.Version + ", driver " + r.DriverVersion)
	}
	lib(nvml, "")
	vis := r.VisibleDevices
	if vis == "" {
		vis = "(unset: every GPU)"
	}
	fmt.Fprintf(&b, col+"%s\n", "CUDA_VISIBLE_DEVICES", vis)
	for _, g := range r.GPUs {
		fmt.Fprintf(&b, col+"%s\n", fmt.Sprintf("GPU %d", g.Ordinal), g.describe())
	}
	if len(r.GPUs) == 0 {
		fmt.Fprintf(&b, col+"none seen\n", "GPUs")
	}
	if p := r.Placement; p != nil {
		fmt.Fprintf(&b, col+"this process, as its launcher's rank, uses GPU %d (%s=%d)\n", "placement", p.Ordinal, p.From, p.Local)
	}
	if len(r.Problems) > 0 {
		b.WriteString("missing:\n")
		for _, p := range r.Problems {
			b.WriteString("  " + p + "\n")
		}
	} else {
		b.WriteString("ok: the CUDA runtime, a GPU, NCCL and NVML\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// describe is one GPU's line: name, compute capability, multiprocessors,
// memory, bus id, UUID, each where known.
func (g GPU) describe() string {
	var f []string
	if g.Name != "" {
		f = append(f, g.Name)
	}
	if g.Compute != "" {
		f = append(f, "compute "+g.Compute)
	}
	if g.SMs > 0 {
		f = append(f, fmt.Sprintf("%d SMs", g.SMs))
	}
	if g.TotalBytes > 0 {
		f = append(f, fmt.Sprintf("%.1f GiB free of %.1f GiB", float64(g.FreeBytes)/(1<<30), float64(g.TotalBytes)/(1<<30)))
	}
	if g.PCIBusID != "" {
		f = append(f, g.PCIBusID)
	}
	if g.UUID != "" {
		f = append(f, g.UUID)
	}
	if g.Err != "" {
		f = append(f, "error: "+g.Err)
	}
	return strings.Join(f, ", ")
}
