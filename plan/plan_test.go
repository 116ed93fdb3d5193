package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/workload"
)

func TestParsePlanDefaultsAndValues(t *testing.T) {
	p, err := Parse([]byte(`{"impl": "fenced", "ttl": "250ms", "fencing": "full",
  "faults": [{"kind": "client-pause", "at": "0s", "duration": "1s", "target": "client:1"}]}`), "p.json", locks.All())
	if err != nil {
		t.Fatal(err)
	}
	if p.TTL.D() != 250*time.Millisecond || p.Clients != Default().Clients || len(p.Faults) != 1 || p.Faults[0].Duration.D() != time.Second {
		t.Fatalf("plan = %+v", p)
	}
	// A plan survives its own serialisation.
	again, err := Parse(p.MarshalIndent(), "again", locks.All())
	if err != nil {
		t.Fatal(err)
	}
	if string(again.MarshalIndent()) != string(p.MarshalIndent()) {
		t.Fatalf("round trip changed the plan:\n%s\n%s", p.MarshalIndent(), again.MarshalIndent())
	}
}

func TestParsePlanErrorsNamePlace(t *testing.T) {
	reg := locks.All()
	cases := []struct {
		name, doc string
		line      int
		field     string
		reason    string
	}{
		{"syntax", "{\n  \"impl\": \"setnx\",\n  \"ttl\": \n}", 4, "", "bad JSON"},
		{"unknown field", "{\n  \"impl\": \"setnx\",\n  \"tll\": \"1s\"\n}", 3, "tll", "unknown field"},
		{"wrong type", "{\n  \"clients\": \"many\"\n}", 2, "clients", "want int"},
		{"bad duration", "{\n  \"impl\": \"setnx\",\n  \"ttl\": \"5 seconds\"\n}", 3, "ttl", `bad duration "5 seconds"`},
		{"unknown impl", "{\n  \"impl\": \"nope\"\n}", 2, "impl", `unknown lock implementation "nope"`},
		{"fencing without fences", "{\n  \"impl\": \"setnx\",\n\n  \"fencing\": \"full\"\n}", 4, "fencing", "grants none"},
		{"too many clients", "{\"clients\": 1000}", 1, "clients", "want 1 to 64"},
		{"fault after end", "{\"duration\": \"1s\",\n \"faults\": [\n  {\"kind\": \"client-pause\",\n   \"at\": \"2s\"}]}", 4, "faults[0].at", "not before the end"},
		{"unknown fault", "{\"faults\": [{\"kind\": \"meteor\"}]}", 1, "faults[0].kind", `unknown fault kind "meteor"`},
		{"every shorter than the fault", "{\"faults\": [\n {\"kind\": \"server-pause\", \"target\": \"lock-0\", \"duration\": \"1s\",\n  \"every\": \"1s\"}]}", 3, "faults[0].every", "not longer than the fault's duration"},
		{"every with a trigger", "{\"faults\": [\n {\"kind\": \"client-pause\", \"trigger\": \"any@before-write\",\n  \"every\": \"5s\"}]}", 3, "faults[0].every", "takes no trigger"},
		{"bad every", "{\"faults\": [\n {\"kind\": \"client-pause\",\n  \"every\": \"often\"}]}", 3, "faults[0].every", "bad duration"},
		{"bad target", "{\"clients\": 2, \"faults\": [\n{\"kind\": \"client-pause\", \"target\": \"client:5\"}]}", 2, "faults[0]", "0 ≤ N < 2"},
		{"jobs without workload", "{\n \"jobs\": {\"count\": 1, \"visibility\": \"1s\"}\n}", 2, "jobs", `workload is not "jobs"`},
		{"jobs missing", "{\"impl\": \"setnx\",\n \"workload\": \"jobs\"\n}", 2, "workload", `needs a "jobs" object`},
		{"unknown workload", "{\n \"workload\": \"batch\"\n}", 2, "workload", `got "batch"`},
		{"no jobs", "{\"workload\": \"jobs\",\n \"jobs\": {\n  \"visibility\": \"1s\"}}", 2, "jobs.rate", "at least one job"},
		{"bad visibility", "{\"workload\": \"jobs\",\n \"jobs\": {\"count\": 1,\n  \"visibility\": \"soon\"}}", 3, "jobs.visibility", "bad duration"},
		{"on_taken without lock", "{\"workload\": \"jobs\",\n \"jobs\": {\"count\": 1, \"visibility\": \"1s\",\n  \"on_taken\": \"retry\"}}", 3, "jobs.on_taken", "without a lock"},
		{"bad on_taken", "{\"workload\": \"jobs\",\n \"jobs\": {\"count\": 1, \"visibility\": \"1s\", \"lock\": true,\n  \"on_taken\": \"wait\"}}", 3, "jobs.on_taken", `got "wait"`},
		{"on_error without lock", "{\"workload\": \"jobs\",\n \"jobs\": {\"count\": 1, \"visibility\": \"1s\",\n  \"on_error\": \"retry\"}}", 3, "jobs.on_error", "without a lock"},
		{"bad on_error", "{\"workload\": \"jobs\",\n \"jobs\": {\"count\": 1, \"visibility\": \"1s\", \"lock\": true,\n  \"on_error\": \"wait\"}}", 3, "jobs.on_error", `got "wait"`},
		{"release without lock", "{\"workload\": \"jobs\",\n \"jobs\": {\"count\": 1, \"visibility\": \"1s\",\n  \"release\": \"after-ack\"}}", 3, "jobs.release", "without a lock"},
		{"bad release", "{\"workload\": \"jobs\",\n \"jobs\": {\"count\": 1, \"visibility\": \"1s\", \"lock\": true,\n  \"release\": \"never\"}}", 3, "jobs.release", `want before-ack or after-ack, got "never"`},
		{"bad stall rate", "{\"workload\": \"jobs\",\n \"jobs\": {\"count\": 1, \"visibility\": \"1s\",\n  \"stall\": {\n   \"rate\": 2}}}", 4, "jobs.stall.rate", "from 0 to 1, got 2"},
		{"bad stall point", "{\"workload\": \"jobs\",\n \"jobs\": {\"count\": 1, \"visibility\": \"1s\",\n  \"stall\": {\"rate\": 0.5,\n   \"at\": \"in-release\"}}}", 4, "jobs.stall.at", `want before-write or before-ack, got "in-release"`},
		{"bad stall after", "{\"workload\": \"jobs\",\n \"jobs\": {\"count\": 1, \"visibility\": \"1s\",\n  \"stall\": {\"rate\": 0.5,\n   \"after\": \"later\"}}}", 4, "jobs.stall.after", "bad duration"},
		{"job point on rmw", "{\"faults\": [\n{\"kind\": \"client-pause\", \"point\": \"before-ack\"}]}", 2, "faults[0].point", "never reaches point"},
		{"pause until nowhere", "{\"faults\": [\n{\"kind\": \"client-pause\", \"duration\": \"1s\", \"until\": \"client:1@nowhere\"}]}", 2, "faults[0].until", `never reaches point "nowhere"`},
		{"wait on single", "{\n \"wait_replicas\": 1, \"wait_timeout\": \"100ms\"}", 2, "wait_replicas", "topology single has none: use topology replicated:2"},
		{"wait for too many", "{\"topology\": \"replicated:2\",\n \"wait_replicas\": 2, \"wait_timeout\": \"100ms\"}", 2, "wait_replicas", "2 replicas, but topology replicated:2 has 1"},
		{"wait for more than a cluster's replicas", "{\"topology\": \"cluster:3x1\",\n \"wait_replicas\": 2, \"wait_timeout\": \"100ms\"}", 2, "wait_replicas", "2 replicas, but topology cluster:3x1 has 1"},
		{"sentinel failover on a cluster", "{\"topology\": \"cluster\", \"faults\": [\n {\"kind\": \"failover\", \"mode\": \"sentinel\"}]}", 2, "faults[0].mode", "its modes: cluster, force, takeover, graceful"},
		{"slot migration on one server", "{\"faults\": [\n {\"kind\": \"slot-migration\", \"duration\": \"1s\"}]}", 2, "faults[0].kind", "moves a slot of a Redis Cluster"},
		{"redlock on a cluster", "{\"impl\": \"redlock\",\n \"topology\": \"cluster\"}", 2, "topology", "does not run on topology cluster:3x1"},
		{"wait without timeout", "{\"topology\": \"replicated\",\n \"wait_replicas\": 1}", 2, "wait_replicas", "without wait_timeout"},
		{"wait timeout too long", "{\"topology\": \"replicated\", \"timeout\": \"1s\",\n \"wait_replicas\": 1, \"wait_timeout\": \"1s\"}", 2, "wait_timeout", "less than the command timeout"},
		{"wait timeout alone", "{\"topology\": \"replicated\",\n \"wait_timeout\": \"1s\"}", 2, "wait_timeout", "without wait_replicas"},
		{"wait on a mutant", "{\"impl\": \"unsafe-release\", \"topology\": \"replicated\",\n \"wait_replicas\": 1, \"wait_timeout\": \"100ms\"}", 2, "wait_replicas", "cannot WAIT for replicas (implementations that can: setnx, fenced)"},
		{"min replicas on nodes", "{\"impl\": \"redlock\", \"topology\": \"nodes:3\",\n \"min_replicas_to_write\": 1}", 2, "min_replicas_to_write", "topology nodes:3 has none"},
		{"min replicas lag not whole", "{\"topology\": \"replicated\", \"min_replicas_to_write\": 1,\n \"min_replicas_max_lag\": \"1500ms\"}", 2, "min_replicas_max_lag", "whole seconds"},
		{"min replicas lag alone", "{\"topology\": \"replicated\",\n \"min_replicas_max_lag\": \"2s\"}", 2, "min_replicas_max_lag", "without min_replicas_to_write"},
		{"empty", "", 1, "", "empty plan"},
		{"two values", "{} {}", 1, "", "more than one JSON value"},
		{"trailing brace", "{\"impl\": \"setnx\"}\n}", 1, "", "more than one JSON value"},
		{"trailing bracket", "{}]", 1, "", "more than one JSON value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc), "p.json", reg)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a FieldError", err)
			}
			if fe.Source != "p.json" || fe.Line != c.line || fe.Field != c.field || !strings.Contains(fe.Reason, c.reason) {
				t.Fatalf("err = %q (line %d, field %q), want p.json:%d: %s: ...%s...", err, fe.Line, fe.Field, c.line, c.field, c.reason)
			}
		})
	}
}

func TestScenariosAreValidPlans(t *testing.T) {
	plans, err := Scenarios(locks.All())
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) < 4 {
		t.Fatalf("catalog has %d scenarios", len(plans))
	}
	if _, err := Scenario("nope", locks.All()); err == nil || !strings.Contains(err.Error(), "pause-past-ttl") {
		t.Fatalf("unknown scenario error %v should list the known ones", err)
	}
}

// FuzzParsePlan: any input yields a valid plan or a clear error with its place, never a panic.
func FuzzParsePlan(f *testing.F) {
	for _, p := range []string{
		`{"impl":"fenced","fencing":"full","faults":[{"kind":"client-pause","at":"0s","duration":"1s","target":"client:0"}]}`,
		`{"clients":2,"keys":3,"ttl":"10ms","duration":"1s"}`,
		`{"ttl":12}`,
		`[]`,
	} {
		f.Add([]byte(p))
	}
	reg := locks.All()
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz", reg)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Source != "fuzz" || fe.Reason == "" {
				t.Fatalf("error without place or reason: %v", err)
			}
			return
		}
		if verr := p.Validate(reg); verr != nil {
			t.Fatalf("accepted plan fails validation: %v", verr)
		}
	})
}

// TestResolveTypesThePlanOnce: a plan resolves to typed values (the implementation from
// the registry, topology, fencing, persistence, every fault built with its trigger
// parsed), and bad triggers are named by their field.
func TestResolveTypesThePlanOnce(t *testing.T) {
	reg := locks.All()
	p := Default()
	p.Impl, p.Topology, p.Fencing, p.Persistence, p.Clients = "fenced", "replicated:3", "full", "aof-always", 2
	p.Faults = []FaultSpec{
		{Kind: "server-pause", Target: "lock-0", Duration: D(time.Second), Trigger: "client:1@acquire:granted"},
		{Kind: "client-pause", Target: "any", Point: "before-write", Duration: D(time.Second)},
	}
	r, err := p.Resolve(reg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Impl.Name != "fenced" || !r.Impl.Fencing || r.Topology.Kind != "replicated" || r.Topology.Nodes != 3 ||
		r.Fencing != "full" || r.Persistence != "aof-always" || len(r.Faults) != 2 {
		t.Fatalf("resolved %+v", r)
	}
	if tr := r.Faults[0].Trigger; tr == nil || tr.Client != 1 || tr.Point != "acquire:granted" || r.Faults[1].Trigger != nil {
		t.Errorf("triggers: %+v, %+v", r.Faults[0].Trigger, r.Faults[1].Trigger)
	}
	if _, err := p.Resolve(nil); err == nil {
		t.Error("Resolve without a registry succeeded")
	}
	for _, c := range []struct{ trigger, field, reason string }{
		{"client:7@acquire:granted", "faults[0].trigger", "0 ≤ N < 2"},
		{"client:0", "faults[0].trigger", "want client:N@point"},
		{"any@nowhere", "faults[0].trigger", `never reaches point "nowhere"`},
	} {
		q := p
		q.Faults = []FaultSpec{{Kind: "server-pause", Target: "lock-0", Duration: D(time.Second), Trigger: c.trigger}}
		_, err := q.Resolve(reg)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Reason, c.reason) {
			t.Errorf("trigger %q: %v, want %s: ...%s...", c.trigger, err, c.field, c.reason)
		}
	}
}

// TestAfterReleaseIsNamedButNeverDrawn: a plan may name after-release, where a client's
// release has been answered, in a fault's until, point and trigger; it is none of the
// points generators draw from (Points), and a point no client reaches is refused with
// the list of those it may name, after-release among them.
func TestAfterReleaseIsNamedButNeverDrawn(t *testing.T) {
	reg := locks.All()
	impl, err := reg.Get("setnx")
	if err != nil {
		t.Fatal(err)
	}
	p := Default()
	p.Impl, p.Clients, p.Extend = "setnx", 2, 1
	for _, f := range []FaultSpec{
		{Kind: "client-pause", Target: "client:0", Point: "before-extend", Duration: D(time.Second), Until: "client:1@after-release"},
		{Kind: "client-pause", Target: "client:1", Point: "after-release", Duration: D(time.Second), Until: "client:0@after-release"},
		{Kind: "client-pause", Target: "client:1", Point: "after-acquire", Duration: D(time.Second), Trigger: "client:0@after-release"},
	} {
		q := p
		q.Faults = []FaultSpec{f}
		if _, err := q.Resolve(reg); err != nil {
			t.Errorf("%+v: %v", f, err)
		}
	}
	for _, w := range []string{WorkloadRMW, WorkloadJobs} {
		q := p
		q.Workload = w
		if slices.Contains(q.Points(impl), workload.AfterRelease) || !slices.Contains(q.Reachable(impl), workload.AfterRelease) {
			t.Errorf("workload %q: Points %v, Reachable %v; want after-release in Reachable alone", w, q.Points(impl), q.Reachable(impl))
		}
	}
	q := p
	q.Faults = []FaultSpec{{Kind: "client-pause", Target: "client:0", Duration: D(time.Second), Until: "client:1@after-releases"}}
	_, err = q.Resolve(reg)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "faults[0].until" || !strings.Contains(fe.Reason, `never reaches point "after-releases"`) || !strings.Contains(fe.Reason, ", after-release)") {
		t.Errorf("until a point no client reaches: %v, want faults[0].until naming the points, after-release among them", err)
	}
}

func TestWithLaysSettingsOver(t *testing.T) {
	reg := locks.All()
	base, err := Scenario("failover-loss", reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := base.With([]string{"persistence=aof-always", "careless=true", "server-clock=faketime", "clients=3"}, "here", reg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Persistence != "aof-always" || !p.Careless || p.ServerClock != "faketime" || p.Clients != 3 || p.Name != base.Name {
		t.Errorf("With gave %+v", p)
	}
	for _, c := range []struct{ setting, want string }{
		{"persistance=none", "here:1: persistance: unknown field"},
		{"clients=-1", "clients"},
		{"careless", `setting "careless" is not key=value`},
	} {
		if _, err := base.With([]string{c.setting}, "here", reg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("With(%q) = %v, want an error with %q", c.setting, err, c.want)
		}
	}
}

// TestSoaksResolve: every soak plan reads and resolves, named as its file.
func TestSoaksResolve(t *testing.T) {
	plans, err := Soaks(locks.All())
	if err != nil || len(plans) < 2 {
		t.Fatalf("%d soak plans: %v", len(plans), err)
	}
	for _, p := range plans {
		if _, err := p.Resolve(locks.All()); err != nil {
			t.Errorf("soak %s: %v", p.Name, err)
		}
		if _, err := Soak(p.Name, locks.All()); err != nil {
			t.Error(err)
		}
	}
	if _, err := Soak("nope", locks.All()); err == nil || !strings.Contains(err.Error(), `unknown soak plan "nope"`) {
		t.Errorf("unknown soak: %v", err)
	}
}
