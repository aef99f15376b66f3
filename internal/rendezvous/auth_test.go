package rendezvous

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/distbench/distbench/internal/wire"
)

// A store keyed by a token refuses, over real TCP and at once rather than
// at the dial timeout, every client that does not prove it holds the
// token, and serves the one that does.
func TestStoreRefusesClientsWithoutTheToken(t *testing.T) {
	t.Parallel()
	token := []byte("the job's secret")
	srv := startServer(t, ServerOptions{JobID: "job-a", Token: token})
	for _, tt := range []struct {
		name string
		o    ClientOptions
	}{
		{"no token", ClientOptions{JobID: "job-a"}},
		{"a wrong token", ClientOptions{JobID: "job-a", Token: []byte("a guess")}},
		{"the token of another job", ClientOptions{JobID: "job-b", Token: token}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Timeout = 10 * time.Second
			start := time.Now()
			c, err := Dial(context.Background(), srv.Addr(), tt.o)
			if err == nil {
				c.Close()
				t.Fatal("the store served a client without the token")
			}
			wantErr(t, err, "this store serves another job, or this client has the wrong token")
			if !errors.Is(err, wire.ErrAuth) && !errors.Is(err, wire.ErrJobMismatch) {
				t.Errorf("%v: want wire.ErrAuth or wire.ErrJobMismatch", err)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("took %v to give up on a refusal", el)
			}
		})
	}
	c := dialT(t, srv.Addr(), ClientOptions{JobID: "job-a", Token: token})
	must(t, c.Set(context.Background(), "k", []byte("v")))
	if got, err := c.Get(context.Background(), "k"); err != nil || string(got) != "v" {
		t.Fatalf("Get = %q, %v; want v", got, err)
	}
}

// A rank's mesh handshake, with the job's id and token, is refused by the
// job's store: the service is part of what the handshake authenticates.
func TestStoreRefusesMeshHandshake(t *testing.T) {
	t.Parallel()
	token := []byte("the job's secret")
	srv := startServer(t, ServerOptions{JobID: "job-a", Token: token})
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	mesh := wire.HandshakeConfig{Service: wire.ServiceMesh, JobID: "job-a", Token: token, Rank: clientRank, Size: 2, Timeout: 5 * time.Second}
	err = wire.ClientHandshake(context.Background(), nc, mesh, storeRank)
	if !errors.Is(err, wire.ErrServiceMismatch) {
		t.Fatalf("mesh handshake with the store: %v; want wire.ErrServiceMismatch", err)
	}
	wantErr(t, err, "refused by peer")
}

// Without a token, the job id is the secret, and it never crosses the
// wire: the hello carries an empty job id. The job id given as the token
// (as workers given no DISTBENCH_TOKEN do) is the same.
func TestJobIDAsSecretStaysOffTheWire(t *testing.T) {
	c := handshakeConfig("job-secret", nil, clientRank)
	if c.JobID != "" || string(c.Token) != "job-secret" {
		t.Fatalf("config without a token: job id %q, token %q; want the job id as the token only", c.JobID, c.Token)
	}
	if d := handshakeConfig("job-secret", []byte("job-secret"), storeRank); d.JobID != c.JobID || string(d.Token) != string(c.Token) {
		t.Fatalf("the job id as the token, %+v, differs from no token, %+v", d, c)
	}
	if c := handshakeConfig("", nil, clientRank); len(c.Token) == 0 || c.Validate() != nil {
		t.Fatalf("config with neither a job id nor a token is unusable: %+v", c)
	}
}
