// Package shards holds the example manifests for running a sharded Gauntlet
// campaign (a Kubernetes Indexed Job, a GitHub Actions matrix); its test keeps
// them valid and their shard counts consistent.
package shards

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

var envShard = regexp.MustCompile(`--shard env/(\d+)\b`)

// TestIndexedJob decodes indexed-job.yaml strictly (unknown or duplicate
// fields fail) and checks the shard Job: Indexed, completions = parallelism =
// the N of every --shard env/N, a privileged root container.
func TestIndexedJob(t *testing.T) {
	data, err := os.ReadFile("indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var indexed []*batchv1.Job
	kinds := map[string]int{}
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("indexed-job.yaml: %v", err)
		}
		kinds[gvk.Kind]++
		if j, ok := obj.(*batchv1.Job); ok && j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion {
			indexed = append(indexed, j)
		}
	}
	if kinds["Job"] != 2 || kinds["PersistentVolumeClaim"] != 1 || len(indexed) != 1 {
		t.Fatalf("indexed-job.yaml holds %v with %d Indexed Jobs; want a PVC, the Indexed shard Job and the merge Job", kinds, len(indexed))
	}
	j := indexed[0]
	spec := j.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("job %s has %d containers, want 1", j.Name, len(spec.Containers))
	}
	c := spec.Containers[0]
	script := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
	ms := envShard.FindAllStringSubmatch(script, -1)
	if len(ms) == 0 {
		t.Fatalf("job %s does not run gauntlet run --shard env/N: %q", j.Name, script)
	}
	n, _ := strconv.Atoi(ms[0][1])
	for _, m := range ms {
		if m[1] != ms[0][1] {
			t.Fatalf("job %s passes --shard env/%s and env/%s", j.Name, ms[0][1], m[1])
		}
	}
	if j.Spec.Completions == nil || j.Spec.Parallelism == nil || int(*j.Spec.Completions) != n || int(*j.Spec.Parallelism) != n {
		t.Fatalf("job %s: completions %v, parallelism %v; want both %d, the N of --shard env/%d", j.Name, deref(j.Spec.Completions), deref(j.Spec.Parallelism), n, n)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Privileged == nil || !*sc.Privileged || sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Fatalf("job %s: the container must run privileged as root (embedded clusters create namespaces, bridges, nftables rules): %+v", j.Name, sc)
	}
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("job %s: restartPolicy %s, want Never (a retried index resumes its journal in a new pod)", j.Name, spec.RestartPolicy)
	}
	if !strings.Contains(script, "--resume") || !strings.Contains(script, "gauntlet run --target") {
		t.Errorf("job %s: a retried index must resume its journal: %q", j.Name, script)
	}
}

// TestGitHubActions parses github-actions.yaml and checks that the matrix is
// 1..N for the N of --shard ${{ matrix.shard }}/N and that a merge job follows.
func TestGitHubActions(t *testing.T) {
	data, err := os.ReadFile("github-actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Needs    any `json:"needs"`
			Strategy struct {
				Matrix map[string][]int `json:"matrix"`
			} `json:"strategy"`
			Steps []struct {
				Run string `json:"run"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("github-actions.yaml: %v", err)
	}
	shard, ok := wf.Jobs["shard"]
	if !ok {
		t.Fatal("github-actions.yaml has no shard job")
	}
	cmd := regexp.MustCompile(`--shard \$\{\{ matrix\.shard \}\}/(\d+)\b`)
	var runs string
	for _, s := range shard.Steps {
		runs += s.Run + "\n"
	}
	m := cmd.FindStringSubmatch(runs)
	if m == nil {
		t.Fatalf("the shard job does not run gauntlet run --shard ${{ matrix.shard }}/N:\n%s", runs)
	}
	n, _ := strconv.Atoi(m[1])
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	if got := shard.Strategy.Matrix["shard"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("matrix.shard is %v; --shard .../%d needs %v", got, n, want)
	}
	merge, ok := wf.Jobs["merge"]
	if !ok || fmt.Sprint(merge.Needs) != "shard" {
		t.Fatalf("no merge job after the shards (needs: %v)", merge.Needs)
	}
	var mergeRuns string
	for _, s := range merge.Steps {
		mergeRuns += s.Run
	}
	if !strings.Contains(mergeRuns, "gauntlet merge --out") {
		t.Fatalf("the merge job does not run gauntlet merge: %q", mergeRuns)
	}
}

func deref(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}

// stripComments drops comment lines, so a document of comments only is skipped.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
