package rendezvous

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/distbench/distbench/collective"
)

// acceptedURLs is the list every URL error ends with.
const acceptedURLs = "accepted: env://, tcp://HOST:PORT, file:///ABSOLUTE/PATH"

// Endpoint is a parsed rendezvous URL.
type Endpoint struct {
	Scheme string // "env", "tcp" or "file"
	Addr   string // tcp: "host:port"; env: empty until read from MASTER_ADDR and MASTER_PORT
	Path   string // file: an absolute, cleaned path
}

func (e Endpoint) String() string {
	switch e.Scheme {
	case "tcp":
		return "tcp://" + e.Addr
	case "file":
		return "file://" + e.Path
	}
	return e.Scheme + "://"
}

// ParseURL parses a rendezvous URL as torch.distributed's init_method
// spells them: "env://", "tcp://host:port" (IPv6 hosts in brackets),
// "file:///absolute/path". Anything else, including query strings and
// credentials, which torch would silently ignore, is an error listing the
// accepted forms.
func ParseURL(s string) (Endpoint, error) {
	bad := func(why string) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("rendezvous: URL %q: %w", s, collective.Invalidf("%s (%s)", why, acceptedURLs))
	}
	if s == "" {
		return bad("empty")
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // drop its repetition of the URL
			err = ue.Err
		}
		return bad(err.Error())
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case u.Scheme == "":
		return bad("no scheme")
	case scheme != "env" && scheme != "tcp" && scheme != "file":
		return bad(fmt.Sprintf("unknown scheme %q", u.Scheme))
	case u.Opaque != "" || !strings.HasPrefix(s[len(u.Scheme):], "://"):
		return bad(fmt.Sprintf("%s: URLs start with %s://", scheme, scheme))
	case u.User != nil:
		return bad("credentials are not accepted")
	case u.RawQuery != "" || u.ForceQuery:
		return bad("query parameters are not accepted; pass rank and size in Options")
	case u.Fragment != "":
		return bad("fragments are not accepted")
	}
	switch scheme {
	case "env":
		if u.Host != "" || (u.Path != "" && u.Path != "/") {
			return bad("env:// takes nothing after the //; its address comes from MASTER_ADDR and MASTER_PORT")
		}
		return Endpoint{Scheme: "env"}, nil
	case "tcp":
		if u.Path != "" && u.Path != "/" {
			return bad(fmt.Sprintf("tcp:// takes no path (got %q)", u.Path))
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || host == "" {
			return bad("tcp:// needs a host and a port")
		}
		if _, err := parsePort(port); err != nil {
			return bad(err.Error())
		}
		return Endpoint{Scheme: "tcp", Addr: net.JoinHostPort(host, port)}, nil
	default: // file
		if u.Host != "" && u.Host != "localhost" {
			return bad(fmt.Sprintf("file:// takes no host (got %q); an absolute path has three slashes: file:///path", u.Host))
		}
		if !filepath.IsAbs(u.Path) || u.Path == "/" {
			return bad("file:// needs an absolute path to a file")
		}
		return Endpoint{Scheme: "file", Path: filepath.Clean(u.Path)}, nil
	}
}

// parsePort accepts 0..65535; port 0 is rejected later where others would
// have to find it.
func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 0 || p > 65535 || s[0] == '+' {
		return 0, fmt.Errorf("port %q is not a number in 0..65535", s)
	}
	return p, nil
}
