package timeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/histories/synth"
	"github.com/locklab/locklab/linearizability"
)

// goldenPictures are the SHA-256 of pictures of fixed histories of a real run's size, as
// the code drew them before their size was bounded (commit 8d7c181): within the bounds a
// picture must not change by a byte, because the tests and the tutorial's pictures rely
// on it.
var goldenPictures = map[string]string{
	"alternating":         "57af07d4d9a48fceeda77c88c6ad29caba22bc164da5c888ed235d6ab4cdb601",
	"pause-past-ttl":      "ecd16a532d03c47d8816eef9e8a99d7879c83f00334e5c1fed40752989cf2561",
	"sample":              "8863779efff8a8dc0f58cf581c3ce993c9a8078aaff18b2096e79de608beef75",
	"synthetic":           "2a84aca35516b1f68eca3de1d6c9e7a770686bee828108ff1309f33bf0c28784",
	"synthetic-faults":    "2564e020bfd404323bc7c34e9bd0cba457ec9e773caae8f894ab9491c38cc5ce",
	"synthetic-redlock":   "35d6519751c4f244f766a845f8b2d5445bf57e9c74953d1cf9895c77d068423a",
	"synthetic-renewed":   "0d00cf92f872e1386d9e92f00df1440cc536ae2c56fe0b57ec14724fc00898ec",
	"synthetic-violation": "edc58babe78bcd23ca3923db3758d12583904b6f4c6b30e6e66ff7416ad4f7d0",
}

func TestPicturesWithinTheBoundsUnchanged(t *testing.T) {
	for name, run := range goldenRuns(t) {
		t.Run(name, func(t *testing.T) {
			svg := renderString(t, run)
			sum := sha256.Sum256([]byte(svg))
			if got := hex.EncodeToString(sum[:]); got != goldenPictures[name] {
				path := filepath.Join(t.ArtifactDir(), name+".svg")
				if err := os.WriteFile(path, []byte(svg), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Errorf("the picture changed: sha256 %s, want %s (written to %s)", got, goldenPictures[name], path)
			}
		})
	}
}

// goldenRuns are the histories of goldenPictures: the sample of testdata, the unit tests'
// pause, BenchmarkRender's long run (cropped at its start) and synthetic runs of a few
// thousand operations with faults, violations and several lock servers.
func goldenRuns(t *testing.T) map[string]Run {
	t.Helper()
	runs := map[string]Run{"pause-past-ttl": pausePastTTL(), "sample": sampleRun(t, "testdata/restart-amnesia-fencing-full"),
		"alternating": {History: single(alternating(10000, 20*ms))}}
	small := legal(t, synth.Legal{Seed: 5, Clients: 4, Keys: 2, Ops: 1500, Unknown: 0.02, Fencing: "full"})
	runs["synthetic"] = Run{History: small, Result: allOK()}

	faulty := legal(t, synth.Legal{Seed: 6, Clients: 3, Keys: 1, Ops: 3000, Unknown: 0.02, Fencing: "writes"})
	faulty.Faults = []histories.FaultWindow{
		{Kind: "client-pause", Target: "client:1", Start: 600 * ms, End: 700 * ms, Detail: "100ms at before-write"},
		{Kind: "net-latency", Target: "client:2->store", Start: 650 * ms, End: 760 * ms},
	}
	runs["synthetic-faults"] = Run{History: faulty, Result: allOK()}

	illegal := allOK()
	illegal.Verdict = linearizability.Illegal
	illegal.Properties[1] = linearizability.PropertyResult{Property: linearizability.P2, Verdict: linearizability.Illegal,
		Explanation: `process 5 (client 1)'s write of 7 over 6 to "k0": lost update`, At: 900 * ms, Until: 905 * ms}
	runs["synthetic-violation"] = Run{History: faulty, Result: illegal}

	redlock := legal(t, synth.Legal{Seed: 7, Clients: 5, Keys: 3, Ops: 2000, Unknown: 0.05, Fencing: "off"})
	redlock.Meta.Servers, redlock.Meta.Topology, redlock.Meta.Impl = []string{"lock-0", "lock-1", "lock-2"}, "nodes:3", "redlock"
	for i := range redlock.Ops {
		if op := &redlock.Ops[i]; op.Kind == histories.Acquire && op.Outcome == histories.OK {
			op.Output.Nodes = [][]int{{0, 1, 2}, {0, 1}, {1, 2}}[i%3]
		}
	}
	redlock.Faults = []histories.FaultWindow{
		{Kind: "server-clock", Target: "lock-1", Start: 300 * ms, End: 500 * ms, Offset: 2 * time.Second},
		{Kind: "server-crash", Target: "lock-2", Start: 400 * ms, End: 450 * ms},
	}
	runs["synthetic-redlock"] = Run{History: redlock, Result: allOK()}
	renewed := redlock
	renewed.Meta.Renews, renewed.Meta.Impl = true, "watchdog"
	runs["synthetic-renewed"] = Run{History: renewed, Result: allOK()}
	return runs
}

// alternating is BenchmarkRender's history: two clients taking turns for n critical
// sections, one every step.
func alternating(n, step int64) []histories.Op {
	var ops []histories.Op
	for i := range n {
		t, c := i*step/ms, int(i%2)
		p := 2 * c
		ops = append(ops, acquire(p, c, t, t+1, i+1), refused(2*(1-c), 1-c, t+1, t+2),
			write(p+1, c, t+3, t+4, i+1, i+1, histories.OK), release(p, c, t+5, t+6, histories.OK),
			write(p+1, c, t+7, t+8, i+2, i+1, histories.OK))
	}
	return ops
}

func legal(t testing.TB, l synth.Legal) histories.History {
	t.Helper()
	h, err := l.History()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// allOK is the result of a legal history: every lock and store property holds.
func allOK() linearizability.Result {
	r := linearizability.Result{Verdict: linearizability.OK, Fencing: "full"}
	for _, p := range []linearizability.Property{linearizability.P1, linearizability.P2, linearizability.P3, linearizability.L1} {
		r.Properties = append(r.Properties, linearizability.PropertyResult{Property: p, Verdict: linearizability.OK})
	}
	return r
}

func sampleRun(t *testing.T, dir string) Run {
	t.Helper()
	h, err := histories.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Result linearizability.Result `json:"result"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	return Run{History: h, Result: res.Result, Title: filepath.Base(dir)}
}
