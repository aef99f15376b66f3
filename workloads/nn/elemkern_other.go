//go:build !amd64 || purego

package nn

func reluAdd(dst, a, b []float32)  { reluAddGo(dst, a, b) }
func relu(dst, x []float32)        { reluGo(dst, x) }
func add3(dst, a, b []float32)     { add3Go(dst, a, b) }
func reluGrad(y, dy, dx []float32) { reluGradGo(y, dy, dx) }
