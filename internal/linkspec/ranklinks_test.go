package linkspec

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseRankLinks(t *testing.T) {
	g10 := Link{Rate: 10e9, Latency: 25 * time.Microsecond}
	tests := []struct {
		in       string
		def      Link
		ranks    map[int]Link
		canon    string
		errParts []string // all must be in the error; nil: no error
	}{
		{in: "", canon: ""},
		{in: "10Gbit,25us", def: g10, canon: "10Gbit,25us"},
		{in: " 10g ", def: linkPresets["10g"], canon: "10g"},
		{in: "rank3=100Mbit", ranks: map[int]Link{3: {Rate: 100e6}}, canon: "rank3=100Mbit"},
		{in: "10Gbit,25us;rank3=1Gbit", def: g10, ranks: map[int]Link{3: {Rate: 1e9}}, canon: "10Gbit,25us;rank3=1Gbit"},
		{in: "RANK10=1gbit ; rank2 = unlimited,1ms ; 10Gbit,25us", def: g10, ranks: map[int]Link{2: {Latency: time.Millisecond}, 10: {Rate: 1e9}},
			canon: "10Gbit,25us;rank2=unlimited,1ms;rank10=1Gbit"},
		{in: "10g;rank0=none", def: linkPresets["10g"], ranks: map[int]Link{0: {}}, canon: "10g;rank0=none"},
		{in: "none;rank3=1g", ranks: map[int]Link{3: linkPresets["1g"]}, canon: "rank3=1Gbit,50us"},
		{in: "10g;1g", errParts: []string{"two default links", `"10g"`, `"1g"`, "accepted"}},
		{in: "rank3=1g;rank3=10g", errParts: []string{"rank 3 is given twice"}},
		{in: "node3=1g", errParts: []string{`"node3" is not rankN`, "accepted"}},
		{in: "rank-1=1g", errParts: []string{`"rank-1" is not rankN`}},
		{in: "rank03=1g", errParts: []string{`"rank03" is not rankN`}},
		{in: "rank=1g", errParts: []string{`"rank" is not rankN`}},
		{in: "rank3=", errParts: []string{"rank3= names no link", "rank3=none"}},
		{in: "rank3=fast", errParts: []string{"rank 3", `rate "fast" has no unit`, "accepted"}},
		{in: "10g;;rank3=1g", errParts: []string{"empty part"}},
		{in: "10q", errParts: []string{`"10q"`, "accepted"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			rl, err := ParseRankLinks(tt.in)
			if tt.errParts != nil {
				if err == nil {
					t.Fatalf("no error, got %v", rl)
				}
				for _, p := range tt.errParts {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("error %q lacks %q", err, p)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rl.Default != tt.def || len(rl.Ranks) != len(tt.ranks) || (len(tt.ranks) > 0 && !reflect.DeepEqual(rl.Ranks, tt.ranks)) {
				t.Errorf("got default %v ranks %v, want %v %v", rl.Default, rl.Ranks, tt.def, tt.ranks)
			}
			if got := rl.String(); got != tt.canon {
				t.Errorf("String() = %q, want %q", got, tt.canon)
			}
			for r, l := range tt.ranks {
				if rl.For(r) != l {
					t.Errorf("For(%d) = %v, want %v", r, rl.For(r), l)
				}
			}
			if rl.For(999) != tt.def {
				t.Errorf("For(999) = %v, want the default %v", rl.For(999), tt.def)
			}
		})
	}
}

func TestJoinLinks(t *testing.T) {
	tests := []struct {
		in   []string
		want string
		err  string
	}{
		{nil, "", ""},
		{[]string{"10g"}, "10g", ""},
		{[]string{"none"}, "none", ""}, // one value as given: old ids keep matching
		{[]string{"10Gbit,25us", "rank3=1Gbit"}, "10Gbit,25us;rank3=1Gbit", ""},
		{[]string{"rank3=1gbit", "10Gbit,25us", "rank1=unlimited,1ms"}, "10Gbit,25us;rank1=unlimited,1ms;rank3=1Gbit", ""},
		{[]string{"rank3=100mbit"}, "rank3=100Mbit", ""},
		{[]string{"10g", "1g"}, "", "two default links"},
		{[]string{"10g", ""}, "", "empty value"},
	}
	for _, tt := range tests {
		got, err := JoinLinks(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("JoinLinks(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("JoinLinks(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestExpandLinks(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
		err  string
	}{
		{nil, []string{""}, ""},
		{[]string{"", "none", " 10g ", "10g"}, []string{"", "10g"}, ""},
		{[]string{"", "10g", "rank3=1Gbit"}, []string{"rank3=1Gbit", "10g;rank3=1Gbit"}, ""},
		{[]string{"rank3=1Gbit"}, []string{"rank3=1Gbit"}, ""},
		{[]string{"10g;rank1=1g", "rank3=1Gbit"}, []string{"10g;rank1=1Gbit,50us;rank3=1Gbit"}, ""},
		{[]string{"none;rank1=1g"}, []string{"rank1=1Gbit,50us"}, ""},
		{[]string{"10g;rank3=1g", "rank3=1Gbit"}, nil, "rank 3 is given both"},
		{[]string{"rank3=1g", "rank3=1Gbit"}, nil, "rank 3 is given twice"},
		{[]string{"10q"}, nil, "accepted"},
	}
	for _, tt := range tests {
		got, err := ExpandLinks(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ExpandLinks(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ExpandLinks(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseRankLinks: whatever parses has a text form that parses to the
// same links and is its own text form.
func FuzzParseRankLinks(f *testing.F) {
	for _, s := range []string{"", "10g", "10Gbit,25us;rank3=1Gbit", "rank3=none", "none;rank1=unlimited,1ms", "rank2=1g;rank2=1g", "a=b;c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rl, err := ParseRankLinks(s)
		if err != nil {
			return
		}
		canon := rl.String()
		back, err := ParseRankLinks(canon)
		if err != nil {
			t.Fatalf("%q parses, but its text form %q does not: %v", s, canon, err)
		}
		if back.Default != rl.Default || len(back.Ranks) != len(rl.Ranks) {
			t.Fatalf("%q: %v %v, but %q: %v %v", s, rl.Default, rl.Ranks, canon, back.Default, back.Ranks)
		}
		for r, l := range rl.Ranks {
			if back.Ranks[r] != l {
				t.Fatalf("%q: rank %d %v, but %q gives %v", s, r, l, canon, back.Ranks[r])
			}
		}
		if again := back.String(); again != canon {
			t.Fatalf("%q: text form %q, then %q", s, canon, again)
		}
	})
}
