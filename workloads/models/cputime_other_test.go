//go:build !unix

package models

import "time"

func cpuTime() time.Duration { return 0 }
