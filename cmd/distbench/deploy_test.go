package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// k8sObject is what TestKubernetesJob reads of a manifest's objects.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		ClusterIP      string            `yaml:"clusterIP"`
		Selector       map[string]string `yaml:"selector"`
		Completions    int               `yaml:"completions"`
		Parallelism    int               `yaml:"parallelism"`
		CompletionMode string            `yaml:"completionMode"`
		Ports          []struct {
			Port int `yaml:"port"`
		} `yaml:"ports"`
		Template struct {
			Spec struct {
				Subdomain  string `yaml:"subdomain"`
				Containers []struct {
					Image   string   `yaml:"image"`
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Env     []struct {
						Name      string `yaml:"name"`
						Value     string `yaml:"value"`
						ValueFrom *struct {
							SecretKeyRef *struct {
								Name string `yaml:"name"`
							} `yaml:"secretKeyRef"`
							FieldRef *struct {
								FieldPath string `yaml:"fieldPath"`
							} `yaml:"fieldRef"`
						} `yaml:"valueFrom"`
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// TestKubernetesJob checks the example Job without a cluster (none is
// reachable from CI): its objects fit together (the headless Service the
// ranks reach rank 0 through, the indexed Job's completions and
// WORLD_SIZE), no secret is written in the file, and its arguments are
// ones distbench accepts.
func TestKubernetesJob(t *testing.T) {
	f, err := os.Open("../../deploy/k8s/allreduce-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objs := map[string]k8sObject{}
	dec := yaml.NewDecoder(f)
	for {
		var o k8sObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if _, dup := objs[o.Kind]; dup {
			t.Fatalf("two %s objects", o.Kind)
		}
		objs[o.Kind] = o
	}
	if _, ok := objs["Secret"]; ok {
		t.Error("the manifest carries a Secret: its value would be the same for every user; the README has them create their own")
	}
	svc, job := objs["Service"], objs["Job"]
	if svc.Spec.ClusterIP != "None" || svc.Spec.Selector["job-name"] != job.Metadata.Name || len(svc.Spec.Ports) != 1 {
		t.Errorf("service %+v: want a headless service selecting job %q", svc, job.Metadata.Name)
	}
	if job.Spec.CompletionMode != "Indexed" || job.Spec.Completions != job.Spec.Parallelism || job.Spec.Template.Spec.Subdomain != svc.Metadata.Name {
		t.Errorf("job %+v: want an indexed job, all pods at once, in the service's subdomain", job.Spec)
	}
	if len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(job.Spec.Template.Spec.Containers))
	}
	c := job.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			env[e.Name] = "field:" + e.ValueFrom.FieldRef.FieldPath
		default:
			env[e.Name] = e.Value
		}
	}
	want := map[string]string{
		"RANK":            "field:metadata.annotations['batch.kubernetes.io/job-completion-index']",
		"WORLD_SIZE":      strconv.Itoa(job.Spec.Completions),
		"MASTER_ADDR":     job.Metadata.Name + "-0." + svc.Metadata.Name,
		"MASTER_PORT":     strconv.Itoa(svc.Spec.Ports[0].Port),
		"DISTBENCH_TOKEN": "secret:" + job.Metadata.Name + "-token",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	manifest, err := os.ReadFile("../../deploy/k8s/allreduce-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(manifest, []byte("kubectl create secret generic "+job.Metadata.Name+"-token --from-literal=token=$(openssl rand -hex 32)")) {
		t.Error("the manifest's comment does not say how to create the token's secret")
	}
	if len(c.Command) != 0 || len(c.Args) < 2 || c.Args[0] != "run" {
		t.Fatalf("container command %q args %q: want the image's entrypoint with run's arguments", c.Command, c.Args)
	}
	// The arguments parse and make a valid spec, as they would in the pod.
	cmd := newRunCmd(io.Discard, io.Discard)
	if err := cmd.ParseFlags(c.Args[1:]); err != nil {
		t.Fatalf("args %q: %v", c.Args, err)
	}
	f2 := cmd.Flags()
	if np, _ := f2.GetInt("np"); strconv.Itoa(np) != env["WORLD_SIZE"] {
		t.Errorf("--np %d, WORLD_SIZE %s", np, env["WORLD_SIZE"])
	}
	if l, _ := f2.GetString("launcher"); l != "env" {
		t.Errorf("--launcher %q, want env", l)
	}
}

// TestDockerfile: the image builds the CLI with the Go release go.mod
// names, and runs it as a non-root user.
func TestDockerfile(t *testing.T) {
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	from := regexp.MustCompile(`(?m)^FROM golang:(\d+\.\d+)`).FindSubmatch(df)
	if goLine == nil || from == nil || string(goLine[1]) != string(from[1]) {
		t.Errorf("Dockerfile builds with golang:%s, go.mod says go %s", from, goLine)
	}
	for _, want := range []string{"./cmd/distbench", "CGO_ENABLED=0"} {
		if !bytes.Contains(df, []byte(want)) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	// The final stage runs as a non-root user, by name or by uid.
	users := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllSubmatch(df, -1)
	if len(users) == 0 {
		t.Fatal("Dockerfile sets no USER: the image would run as root")
	}
	if u := string(users[len(users)-1][1]); u == "root" || u == "0" || strings.HasPrefix(u, "0:") || strings.HasPrefix(u, "root:") {
		t.Errorf("Dockerfile's last USER is %q: the image runs as root", u)
	}
}
