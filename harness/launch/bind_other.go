//go:build !linux

package launch

// Binding processes to CPUs is implemented for Linux only.

func allowedCPUs() []int { return nil }

func bindToCPUs(string) error { return nil }
