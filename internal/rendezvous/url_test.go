package rendezvous

import (
	"errors"
	"strings"
	"testing"

	"github.com/distbench/distbench/collective"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in   string
		want Endpoint
	}{
		{"env://", Endpoint{Scheme: "env"}},
		{"ENV://", Endpoint{Scheme: "env"}},
		{"tcp://10.0.0.1:29500", Endpoint{Scheme: "tcp", Addr: "10.0.0.1:29500"}},
		{"tcp://node-7.cluster:1234/", Endpoint{Scheme: "tcp", Addr: "node-7.cluster:1234"}},
		{"tcp://[::1]:29500", Endpoint{Scheme: "tcp", Addr: "[::1]:29500"}},
		{"tcp://127.0.0.1:0", Endpoint{Scheme: "tcp", Addr: "127.0.0.1:0"}},
		{"file:///tmp/job.store", Endpoint{Scheme: "file", Path: "/tmp/job.store"}},
		{"file://localhost/tmp/a/../job.store", Endpoint{Scheme: "file", Path: "/tmp/job.store"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseURL(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseURLErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty"},
		{"10.0.0.1:29500", "first path segment in URL cannot contain colon"},
		{"/tmp/store", "no scheme"},
		{"http://10.0.0.1:80", `unknown scheme "http"`},
		{"gloo://x", `unknown scheme "gloo"`},
		{"tcp:10.0.0.1:29500", "tcp: URLs start with tcp://"},
		{"env:", "env: URLs start with env://"},
		{"env://10.0.0.1:29500", "env:// takes nothing after the //"},
		{"tcp://10.0.0.1", "tcp:// needs a host and a port"},
		{"tcp://:29500", "tcp:// needs a host and a port"},
		{"tcp://10.0.0.1:http", `invalid port ":http"`},
		{"tcp://10.0.0.1:70000", `port "70000"`},
		{"tcp://10.0.0.1:29500/path", "tcp:// takes no path"},
		{"tcp://10.0.0.1:29500?rank=0&world_size=2", "query parameters are not accepted"},
		{"tcp://user:pw@10.0.0.1:29500", "credentials are not accepted"},
		{"tcp://10.0.0.1:29500#x", "fragments are not accepted"},
		{"file://tmp/store", `file:// takes no host (got "tmp")`},
		{"file:///", "file:// needs an absolute path"},
		{"file:relative", "file: URLs start with file://"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseURL(tt.in)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range []string{tt.want, "accepted: env://, tcp://HOST:PORT, file:///ABSOLUTE/PATH"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to contain %q", err, w)
				}
			}
			if !errors.Is(err, collective.ErrInvalid) {
				t.Errorf("err = %v does not match ErrInvalid", err)
			}
		})
	}
}
