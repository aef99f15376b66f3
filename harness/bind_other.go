//go:build !linux

package harness

// Binding processes to CPUs is implemented for Linux only.

func allowedCPUs() []int { return nil }

func bindToCPUs(string) error { return nil }
