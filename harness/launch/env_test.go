package launch

import (
	"errors"
	"strings"
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

// A rank under an external launcher starts only on a secret a stranger
// cannot guess, and the refusal never quotes what it was given.
func TestToken(t *testing.T) {
	const good = "00112233445566778899aabbccddeeff"
	tests := []struct {
		name, value string
		want        string // in the error; "" for none
	}{
		{"unset", "", "DISTBENCH_TOKEN is not set"},
		{"spaces only", "  ", "DISTBENCH_TOKEN is not set"},
		{"not hex", "correct-horse-battery-staple-0123", "not hex (accepted: at least 32 hex digits)"},
		{"too short", "deadbeefdeadbeef", "has 8 bytes, too few"},
		{"16 bytes", good, ""},
		{"surrounding spaces", " " + good + "\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := Token(func(k string) string { return map[string]string{EnvToken: tt.value}[k] })
			if tt.want == "" {
				if err != nil || len(tok) != MinTokenBytes {
					t.Fatalf("got %x, %v; want %d bytes", tok, err, MinTokenBytes)
				}
				return
			}
			switch {
			case !errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), tt.want):
				t.Fatalf("got %v; want ErrNoToken saying %q", err, tt.want)
			case !strings.Contains(err.Error(), "openssl rand -hex 16"):
				t.Errorf("%v: does not say how to make one", err)
			case strings.Count(err.Error(), "\n") != 0:
				t.Errorf("%q: not one line", err)
			case strings.TrimSpace(tt.value) != "" && strings.Contains(err.Error(), strings.TrimSpace(tt.value)):
				t.Errorf("%v: quotes the value", err)
			}
		})
	}
}
