package launch

import (
	"testing"
)

func TestListenHost(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvListenHost: "10.0.0.7", "MASTER_ADDR": "10.0.0.1"}, "10.0.0.7"},
		{map[string]string{}, "127.0.0.1"},
		{map[string]string{"MASTER_ADDR": "localhost"}, "127.0.0.1"},
		{map[string]string{"MASTER_ADDR": "127.0.0.1"}, "127.0.0.1"},
		{map[string]string{"MASTER_ADDR": "::1"}, "127.0.0.1"},
		// A name that does not resolve: loopback, and the join then
		// says what is wrong with MASTER_ADDR.
		{map[string]string{"MASTER_ADDR": "no-such-host.invalid"}, "127.0.0.1"},
	}
	for _, tt := range tests {
		if got := ListenHost(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.env, got, tt.want)
		}
	}
}
