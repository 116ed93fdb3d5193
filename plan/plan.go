package plan

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/internal/jsonfile"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/workload"
)

// Plan is one run, as data: everything random derives from Seed, so a plan replays.
type Plan struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Impl        string `json:"impl"`
	// ImplOptions are settings of the implementation, as its users configure the library
	// (lockimpl.Option; `locklab list` shows each implementation's).
	ImplOptions map[string]json.RawMessage `json:"impl_options,omitempty"`
	Topology    string                     `json:"topology"`
	// Backend is what runs the servers: "process" (the default: local redis-server
	// processes) or "docker" (containers of the locklab/redis image, each on its own
	// network address; needed by partitions between servers).
	Backend     string `json:"backend,omitempty"`
	Persistence string `json:"persistence,omitempty"`  // lock servers: none (default), aof-everysec, aof-always
	ServerClock string `json:"server_clock,omitempty"` // "faketime": lock servers run under libfaketime, for clock faults
	// ClientClock "faketime": client processes (subprocess clients) run under libfaketime,
	// so that client-clock faults move the clock they read themselves (Node.js, Python).
	ClientClock string   `json:"client_clock,omitempty"`
	Clients     int      `json:"clients"`
	Keys        int      `json:"keys"`
	TTL         Duration `json:"ttl"`
	Duration    Duration `json:"duration"`           // how long clients start new critical sections
	Work        Duration `json:"work"`               // critical section between read and write
	Think       Duration `json:"think"`              // between a release and the next acquire; longer than retry, or the releaser starves the others
	Retry       Duration `json:"retry"`              // mean delay after a refused acquire
	Timeout     Duration `json:"timeout"`            // per network operation
	Fencing     string   `json:"fencing"`            // off, writes, full
	Careless    bool     `json:"careless,omitempty"` // no validity check before touching the store
	Extend      float64  `json:"extend,omitempty"`   // probability that a critical section extends its lease once, halfway through its work
	// WaitReplicas and WaitTimeout: after every grant and extension the lock sends WAIT
	// for that many replicas, and keeps a grant they did not all acknowledge within the
	// timeout only long enough to release it (refused). Replicated topology, and an
	// implementation that takes it (lockimpl.Impl.Waits: setnx, fenced and theirs run
	// out of process).
	WaitReplicas int      `json:"wait_replicas,omitempty"`
	WaitTimeout  Duration `json:"wait_timeout,omitzero"`
	// MinReplicasToWrite and MinReplicasMaxLag are every lock server's
	// min-replicas-to-write and min-replicas-max-lag (whole seconds; Redis's default
	// 10s when left out): a primary refuses writes while fewer replicas acknowledged
	// it within the lag. Replicated topology.
	MinReplicasToWrite int         `json:"min_replicas_to_write,omitempty"`
	MinReplicasMaxLag  Duration    `json:"min_replicas_max_lag,omitzero"`
	Seed               int64       `json:"seed"`
	Faults             []FaultSpec `json:"faults,omitempty"`
	// Workload is what the clients do: "rmw" (the default: read-modify-write of the
	// protected store under the lock) or "jobs" (workers of a job queue; see Jobs).
	Workload string    `json:"workload,omitempty"`
	Jobs     *JobsSpec `json:"jobs,omitempty"`
	// External names the servers the plan ran on that locklab did not start, passwords
	// redacted (see External).
	External *External `json:"external,omitempty"`
}

// The backends a plan can name (Plan.Backend).
const (
	BackendProcess = "process"
	BackendDocker  = "docker"
)

// CheckBackend says what is wrong with a backend name ("" is the process backend).
func CheckBackend(name string) error {
	if name != "" && name != BackendProcess && name != BackendDocker {
		return fmt.Errorf("unknown backend %q (want %s or %s)", name, BackendProcess, BackendDocker)
	}
	return nil
}

// The workloads a plan can name.
const (
	WorkloadRMW  = "rmw"
	WorkloadJobs = "jobs"
)

// JobsSpec is the job-queue workload (workload.Jobs): clients are its workers, work is
// each job's processing time, ttl the per-job lock's lease, fencing the ledger's rule,
// retry the pause after a failed queue command.
type JobsSpec struct {
	Rate       float64  `json:"rate,omitempty"`  // jobs per second while the run lasts
	Count      int      `json:"count,omitempty"` // jobs pushed at once when the run starts
	SameKey    bool     `json:"same_key,omitempty"`
	Visibility Duration `json:"visibility"`
	Lock       bool     `json:"lock,omitempty"`     // each job under the lock of its key (the plan's impl)
	OnTaken    string   `json:"on_taken,omitempty"` // drop (default) or retry
	// OnError is what a worker does with a job whose lock acquire failed with an error (an
	// unknown outcome): drop or retry; unset, as on_taken says (a worker that cannot tell
	// an error from a taken lock, as the write-up's withLock cannot).
	OnError    string `json:"on_error,omitempty"`
	Idempotent bool   `json:"idempotent,omitempty"` // an idempotency record written with the side effect
	// Release is when a job's lock is released: ReleaseBeforeAck (the default: right after
	// the side effect, as withLock wraps the job alone) or ReleaseAfterAck (held until the
	// job is acknowledged).
	Release string `json:"release,omitempty"`
	// Stall makes a share of the jobs' first runs stall past their visibility timeout
	// (workload.Stall), so that the queue re-delivers them while they run.
	Stall *StallSpec `json:"stall,omitempty"`
}

// When a job's lock is released (JobsSpec.Release).
const (
	ReleaseBeforeAck = "before-ack"
	ReleaseAfterAck  = "after-ack"
)

// StallSpec is a stall past the visibility timeout that strikes a share of the jobs' first
// runs (workload.Stall): the run waits at its point until the queue has re-delivered its
// job, then After more; a share Fail of the stalled runs then fails, never acknowledged.
type StallSpec struct {
	Rate float64 `json:"rate"`         // share of first runs that stall, 0 to 1
	At   string  `json:"at,omitempty"` // before-write (the default: the lock held) or before-ack
	// After is how long the run stalls on once its job was re-delivered.
	After Duration `json:"after,omitzero"`
	Fail  float64  `json:"fail,omitempty"` // share of stalled runs that then fail, 0 to 1
}

// MaxJobs bounds a plan's jobs (rate × duration + count), so that a typo cannot queue millions.
const MaxJobs = 100_000_000

// FaultSpec is one scheduled fault of a plan (see faults.Spec for the fields).
type FaultSpec struct {
	Kind      string   `json:"kind"`
	At        Duration `json:"at"`
	Duration  Duration `json:"duration"`
	Target    string   `json:"target,omitempty"`
	Point     string   `json:"point,omitempty"`
	Trigger   string   `json:"trigger,omitempty"`
	Latency   Duration `json:"latency,omitzero"`
	Jitter    Duration `json:"jitter,omitzero"`
	Direction string   `json:"direction,omitempty"`
	Offset    Duration `json:"offset,omitzero"`
	Rate      float64  `json:"rate,omitempty"`
	Mode      string   `json:"mode,omitempty"`
	Cut       string   `json:"cut,omitempty"`
	Until     string   `json:"until,omitempty"`
	Every     Duration `json:"every,omitzero"` // strike again every this long, as long as the run lasts
}

// Spec converts f for the faults package.
func (f FaultSpec) Spec() faults.Spec {
	return faults.Spec{
		Kind: f.Kind, At: f.At.D(), Duration: f.Duration.D(), Target: f.Target, Point: f.Point,
		Trigger: f.Trigger, Latency: f.Latency.D(), Jitter: f.Jitter.D(), Direction: f.Direction,
		Offset: f.Offset.D(), Rate: f.Rate, Mode: f.Mode, Cut: f.Cut, Until: f.Until, Every: f.Every.D(),
	}
}

// Limits on a plan, so that a typo cannot start a thousand clients.
const (
	MaxClients = 64
	MaxKeys    = 64
	MaxRunTime = 7 * 24 * time.Hour // a soak of days is a real use
)

// Default is what a plan file or flag leaves unsaid. docs/cli.md lists these values.
func Default() Plan {
	return Plan{
		Impl: "setnx", Topology: "single", Clients: 3, Keys: 1,
		TTL: D(500 * time.Millisecond), Duration: D(3 * time.Second), Work: D(20 * time.Millisecond),
		Think: D(20 * time.Millisecond), Retry: D(10 * time.Millisecond), Timeout: D(2 * time.Second), Fencing: "off", Seed: 1,
	}
}

// FaultSpecs converts the plan's faults for the faults package.
func (p Plan) FaultSpecs() []faults.Spec {
	out := make([]faults.Spec, len(p.Faults))
	for i, f := range p.Faults {
		out[i] = f.Spec()
	}
	return out
}

// FieldError is a plan value that is wrong, with the place it came from.
type FieldError struct {
	Source string // file name or "flags"
	Line   int    // 0 when unknown
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	place := e.Source
	if e.Line > 0 {
		place += ":" + strconv.Itoa(e.Line)
	}
	if e.Field == "" {
		return place + ": " + e.Reason
	}
	return fmt.Sprintf("%s: %s: %s", place, e.Field, e.Reason)
}

// Read reads a plan file.
func Read(path string, reg *lockimpl.Registry) (Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, fmt.Errorf("read plan: %w", err)
	}
	return Parse(data, path, reg)
}

// Parse decodes a plan on top of DefaultPlan and validates it. Unknown fields are
// errors; every error names source, line and field.
func Parse(data []byte, source string, reg *lockimpl.Registry) (Plan, error) {
	p := Default()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, decodeError(data, source, err)
	}
	if rest := jsonfile.Rest(data, dec); len(rest) > 0 {
		return Plan{}, &FieldError{Source: source, Line: jsonfile.LineAt(data, dec.InputOffset()), Reason: fmt.Sprintf("more than one JSON value (%.20q after the plan)", rest)}
	}
	if err := p.Validate(reg); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.Source = source
			lines := jsonfile.FieldLines(data)
			// A field left out has no line: point at the nearest enclosing one given.
			for f := fe.Field; f != "" && fe.Line == 0; {
				fe.Line = lines[f]
				f = f[:max(0, strings.LastIndexAny(f, ".["))]
			}
		}
		return Plan{}, err
	}
	return p, nil
}

func decodeError(data []byte, source string, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &FieldError{Source: source, Line: jsonfile.LineAt(data, syn.Offset), Reason: "bad JSON: " + syn.Error()}
	case errors.As(err, &typ):
		return &FieldError{Source: source, Line: jsonfile.LineAt(data, typ.Offset), Field: typ.Field,
			Reason: fmt.Sprintf("want %s, got JSON %s", typ.Type, typ.Value)}
	case errors.Is(err, io.EOF):
		return &FieldError{Source: source, Line: 1, Reason: "empty plan"}
	}
	// Unknown fields: encoding/json names the field but not where it is.
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		line := 0
		for path, l := range jsonfile.FieldLines(data) {
			if path == name || strings.HasSuffix(path, "."+name) {
				line = l
				break
			}
		}
		return &FieldError{Source: source, Line: line, Field: name, Reason: "unknown field"}
	}
	return &FieldError{Source: source, Reason: "bad JSON: " + msg}
}

// Resolved is a plan checked against a registry and turned into the typed values the
// stages of a run take: every string of the plan is parsed and every name looked up
// here, once, so that a plan that resolved cannot fail to parse later. Its faults are
// built for one run (a fault keeps state while it runs): run a plan again by resolving
// it again.
type Resolved struct {
	Plan        Plan
	Impl        lockimpl.Impl
	Topology    cluster.Topology
	Fencing     workload.Fencing
	Persistence cluster.Persistence // "" when the plan leaves it unsaid: servers keep theirs
	Options     lockimpl.Options    // the implementation's options, defaults filled in
	Wait        lockimpl.Wait       // wait_replicas, wait_timeout (Replicas 0: no WAIT)
	MinReplicas MinReplicas         // min_replicas_to_write, min_replicas_max_lag
	Faults      []*faults.Planned
}

// badField is the error of a plan's field, for the resolve steps.
func badField(field, format string, args ...any) error {
	return &FieldError{Source: "plan", Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Validate checks every field; reg (when not nil) must know the implementation.
func (p Plan) Validate(reg *lockimpl.Registry) error {
	_, err := p.resolve(reg)
	return err
}

// Resolve validates p against reg and returns its typed values.
func (p Plan) Resolve(reg *lockimpl.Registry) (*Resolved, error) {
	if reg == nil {
		return nil, errors.New("resolve plan: no registry of implementations")
	}
	return p.resolve(reg)
}

func (p Plan) resolve(reg *lockimpl.Registry) (*Resolved, error) {
	bad := badField
	r := &Resolved{Plan: p}
	for _, d := range []struct {
		name string
		d    Duration
	}{{"ttl", p.TTL}, {"duration", p.Duration}, {"work", p.Work}, {"think", p.Think}, {"retry", p.Retry}, {"timeout", p.Timeout},
		{"wait_timeout", p.WaitTimeout}, {"min_replicas_max_lag", p.MinReplicasMaxLag}} {
		if d.d.bad != "" {
			return nil, bad(d.name, "%s", d.d.bad)
		}
		if d.d.D() < 0 {
			return nil, bad(d.name, "must not be negative, got %s", d.d.D())
		}
	}
	switch {
	case p.Impl == "":
		return nil, bad("impl", "missing")
	case p.Clients < 1 || p.Clients > MaxClients:
		return nil, bad("clients", "want 1 to %d, got %d", MaxClients, p.Clients)
	case p.Keys < 1 || p.Keys > MaxKeys:
		return nil, bad("keys", "want 1 to %d, got %d", MaxKeys, p.Keys)
	case p.TTL.D() < time.Millisecond:
		return nil, bad("ttl", "want at least 1ms, got %s", p.TTL.D())
	case p.Duration.D() <= 0 || p.Duration.D() > MaxRunTime:
		return nil, bad("duration", "want more than 0 and at most %s, got %s", MaxRunTime, p.Duration.D())
	case p.Timeout.D() <= 0:
		return nil, bad("timeout", "must be positive, got %s", p.Timeout.D())
	case p.Extend < 0 || p.Extend > 1:
		return nil, bad("extend", "want a probability from 0 to 1, got %g", p.Extend)
	}
	var err error
	if r.Topology, err = cluster.ParseTopology(p.Topology); err != nil {
		return nil, bad("topology", "%v", err)
	}
	switch r.Persistence = cluster.Persistence(p.Persistence); r.Persistence {
	case "", cluster.PersistNone, cluster.PersistAOFEverysec, cluster.PersistAOFAlways:
	default:
		return nil, bad("persistence", "want none, aof-everysec or aof-always, got %q", p.Persistence)
	}
	for _, c := range []struct{ field, v string }{{"server_clock", p.ServerClock}, {"client_clock", p.ClientClock}} {
		switch c.v {
		case "", "real", cluster.ClockFaketime:
		default:
			return nil, bad(c.field, `want "real" or %q, got %q`, cluster.ClockFaketime, c.v)
		}
	}
	if err := CheckBackend(p.Backend); err != nil {
		return nil, bad("backend", "%v", err)
	}
	if cluster.Consensus(r.Topology.Kind) && p.Backend == BackendDocker {
		return nil, bad("backend", "%s members run as local processes only; use backend %s for topology %s", r.Topology.Kind, BackendProcess, r.Topology)
	}
	if field, err := cluster.Refuses(r.Topology.Kind, cluster.Options{Persistence: r.Persistence, ServerClock: p.ServerClock}); err != nil {
		return nil, bad(field, "%v", err)
	}
	if r.Fencing, err = workload.ParseFencing(p.Fencing); err != nil {
		return nil, bad("fencing", "%v", err)
	}
	if err := p.resolveJobs(r); err != nil {
		return nil, err
	}
	if reg != nil {
		if r.Impl, err = reg.Get(p.Impl); err != nil {
			return nil, bad("impl", "%v", err)
		}
		if !r.Impl.RunsOn(r.Topology.Kind) {
			return nil, bad("topology", "%s does not run on topology %s (it needs %s)", p.Impl, r.Topology, r.Impl.Topology)
		}
		if r.Fencing != workload.FencingOff && !r.Impl.Fencing {
			return nil, bad("fencing", "mode %s needs fencing tokens, but %s grants none (fence source none); use an implementation with fences, e.g. fenced", p.Fencing, p.Impl)
		}
		if r.Options, err = r.Impl.ResolveOptions(p.ImplOptions); err != nil {
			field := "impl_options"
			if oe := (*lockimpl.OptionError)(nil); errors.As(err, &oe) {
				field += "." + oe.Name
			}
			return nil, bad(field, "%v", err)
		}
	}
	if err := p.resolveReplication(r, reg); err != nil {
		return nil, err
	}
	points := p.Reachable(r.Impl)
	for i, f := range p.Faults {
		field := fmt.Sprintf("faults[%d]", i)
		for _, d := range []struct {
			name string
			d    Duration
		}{{"at", f.At}, {"duration", f.Duration}, {"latency", f.Latency}, {"jitter", f.Jitter}, {"offset", f.Offset}, {"every", f.Every}} {
			if d.d.bad != "" {
				return nil, bad(field+"."+d.name, "%s", d.d.bad)
			}
		}
		switch e := f.Every.D(); {
		case e < 0:
			return nil, bad(field+".every", "want a positive duration, got %s", e)
		case e > 0 && f.Trigger != "":
			return nil, bad(field+".every", "a fault that strikes every %s is timed: it takes no trigger", e)
		case e > 0 && e <= f.Duration.D():
			return nil, bad(field+".every", "%s is not longer than the fault's duration (%s): a strike must heal before the next", e, f.Duration.D())
		}
		if f.Trigger == "" && f.At.D() >= p.Duration.D() {
			return nil, bad(field+".at", "%s is not before the end of the run (%s)", f.At.D(), p.Duration.D())
		}
		if err := faults.OnTopology(f.Kind, r.Topology); err != nil {
			return nil, bad(field+".kind", "%v", err)
		}
		if err := faults.ModeOnTopology(f.Kind, f.Mode, r.Topology); err != nil {
			return nil, bad(field+".mode", "%v", err)
		}
		if err := faults.OnBackend(f.Kind, p.Backend); err != nil {
			return nil, bad(field+".kind", "%v", err)
		}
		pl, err := faults.Prepare(f.Spec(), p.Clients)
		if err != nil {
			sub := ".kind"
			if te := (*faults.TriggerError)(nil); errors.As(err, &te) {
				sub = ".trigger"
			}
			return nil, bad(field+sub, "%v", err)
		}
		// Availability that depends on servers is checked when the run starts.
		if err := pl.Available(faults.NewEnv(nil, nil, p.Clients)); err != nil && !errors.Is(err, faults.ErrNeedsCluster) {
			return nil, bad(field, "%v", err)
		}
		if reg != nil && f.Kind == "client-pause" && f.Mode == faults.PauseProcess && !r.Impl.Process {
			return nil, bad(field+".mode", "a stop-the-world pause (mode %s) needs a client that runs as a process of its own, and %s runs in locklab's process; use a subprocess client (e.g. watchdog-process)", faults.PauseProcess, p.Impl)
		}
		if reg != nil {
			sub := ".point"
			if pl.Trigger != nil {
				sub = ".trigger"
			}
			if point := pl.Point(); point != "" && !slices.Contains(points, point) {
				return nil, bad(field+sub, "%s never reaches point %q (points: %s)", p.Impl, point, strings.Join(points, ", "))
			}
			if pl.Until != nil && !slices.Contains(points, pl.Until.Point) {
				return nil, bad(field+".until", "%s never reaches point %q (points: %s)", p.Impl, pl.Until.Point, strings.Join(points, ", "))
			}
		}
		r.Faults = append(r.Faults, pl)
	}
	return r, nil
}

// Reachable are the points a plan's fault may name with impl (its point, trigger or
// until): Points, and workload.AfterRelease, where a client's release has been
// answered. AfterRelease is the harness's: no generator draws it (it is none of Points),
// a plan names it to make an order (wait until another client's release has landed).
func (p Plan) Reachable(impl lockimpl.Impl) []string {
	return append(p.Points(impl), workload.AfterRelease)
}

// Points are where p's clients can be struck with impl: the workload's points (with
// before-extend when its sections extend and impl can), the lock's steps, and with WAIT an in-process lock's step before it (lockimpl.StepWaiting;
// a client process's steps are its own).
func (p Plan) Points(impl lockimpl.Impl) []string {
	points := workload.Points()
	if p.Workload == WorkloadJobs {
		points = workload.JobPoints()
	}
	if p.Workload != WorkloadJobs && p.Extend > 0 && !impl.NoExtend {
		points = append(points, workload.BeforeExtend) // reached only by a section that extends
	}
	points = append(points, impl.Steps...)
	if p.WaitReplicas > 0 && impl.Waits && !impl.Process {
		points = append(points, lockimpl.StepWaiting)
	}
	return points
}

// resolveJobs checks the workload and the job-queue fields.
func (p Plan) resolveJobs(r *Resolved) error {
	bad := badField
	switch p.Workload {
	case "", WorkloadRMW:
		if p.Jobs != nil {
			return bad("jobs", `set, but workload is not "jobs"`)
		}
		return nil
	case WorkloadJobs:
	default:
		return bad("workload", "want %q or %q, got %q", WorkloadRMW, WorkloadJobs, p.Workload)
	}
	j := p.Jobs
	if j == nil {
		return bad("workload", `"jobs" needs a "jobs" object (its rate or count, and visibility)`)
	}
	if j.Visibility.bad != "" {
		return bad("jobs.visibility", "%s", j.Visibility.bad)
	}
	total := j.Rate*p.Duration.D().Seconds() + float64(j.Count)
	switch {
	case j.Rate < 0 || j.Count < 0 || total < 1:
		return bad("jobs.rate", "want a rate or a count that makes at least one job, got rate %g and count %d", j.Rate, j.Count)
	case total > MaxJobs:
		return bad("jobs.rate", "%.0f jobs (rate × duration + count) is more than %d", total, MaxJobs)
	case j.Visibility.D() <= 0:
		return bad("jobs.visibility", "must be positive, got %s", j.Visibility.D())
	}
	// What a worker does with a job it could not lock: when the lock is taken, and when
	// the acquire failed with an error.
	for _, policy := range []struct{ field, value string }{{"jobs.on_taken", j.OnTaken}, {"jobs.on_error", j.OnError}} {
		switch policy.value {
		case "":
			continue
		case workload.OnTakenDrop, workload.OnTakenRetry:
		default:
			return bad(policy.field, "want %s or %s, got %q", workload.OnTakenDrop, workload.OnTakenRetry, policy.value)
		}
		if !j.Lock {
			return bad(policy.field, "set, but the jobs run without a lock (lock is false)")
		}
	}
	switch j.Release {
	case "", ReleaseBeforeAck:
	case ReleaseAfterAck:
		if !j.Lock {
			return bad("jobs.release", "%s, but the jobs run without a lock (lock is false)", j.Release)
		}
	default:
		return bad("jobs.release", "want %s or %s, got %q", ReleaseBeforeAck, ReleaseAfterAck, j.Release)
	}
	if st := j.Stall; st != nil {
		switch {
		case st.Rate < 0 || st.Rate > 1:
			return bad("jobs.stall.rate", "want a share from 0 to 1, got %g", st.Rate)
		case st.Fail < 0 || st.Fail > 1:
			return bad("jobs.stall.fail", "want a share from 0 to 1, got %g", st.Fail)
		case st.At != "" && !slices.Contains(workload.StallPoints(), st.At):
			return bad("jobs.stall.at", "want %s, got %q", strings.Join(workload.StallPoints(), " or "), st.At)
		case st.After.bad != "":
			return bad("jobs.stall.after", "%s", st.After.bad)
		case st.After.D() < 0:
			return bad("jobs.stall.after", "must not be negative, got %s", st.After.D())
		}
	}
	if r.Fencing != workload.FencingOff && !j.Lock {
		return bad("fencing", "mode %s fences the ledger with the lock's tokens, but the jobs run without a lock", p.Fencing)
	}
	return nil
}

// JobsConfig is the plan's job-queue workload for the workload package (nil for rmw),
// with the queue kept on the server at queueAddr.
func (p Plan) JobsConfig(queueAddr string) *workload.Jobs {
	if p.Workload != WorkloadJobs || p.Jobs == nil {
		return nil
	}
	j := p.Jobs
	onTaken := cmp.Or(j.OnTaken, workload.OnTakenDrop)
	w := &workload.Jobs{Rate: j.Rate, Count: j.Count, SameKey: j.SameKey, Visibility: j.Visibility.D(),
		Lock: j.Lock, OnTaken: onTaken, OnError: cmp.Or(j.OnError, onTaken), Idempotent: j.Idempotent, ReleaseAfterAck: j.Release == ReleaseAfterAck,
		QueueAddr: queueAddr}
	if st := j.Stall; st != nil {
		at := st.At
		if at == "" {
			at = workload.BeforeWrite
		}
		w.Stall = &workload.Stall{Rate: st.Rate, At: at, After: st.After.D(), Fail: st.Fail}
	}
	return w
}

// Calm reports whether p's critical section stays well inside its lease: work at most a
// quarter of the TTL and at least 150 ms of the lease left after it, so that neither the
// work nor an ordinary scheduling delay can outlast the lease.
func (p Plan) Calm() bool {
	return 4*p.Work.D() <= p.TTL.D() && p.TTL.D()-p.Work.D() >= 150*time.Millisecond
}

// WithFencing is the plan run under another fencing mode, named after it.
func (p Plan) WithFencing(mode string) Plan {
	p.Fencing = mode
	return p
}

// With lays settings over p: each is key=value, the key a plan field (dashes stand for
// underscores, as in the run command's flags), the value JSON when it parses as JSON,
// else a string. The result is parsed and validated again, so a bad setting is refused
// by name (source says where the settings came from).
func (p Plan) With(settings []string, source string, reg *lockimpl.Registry) (Plan, error) {
	if len(settings) == 0 {
		return p, nil
	}
	var fields map[string]any
	if err := json.Unmarshal(p.MarshalIndent(), &fields); err != nil {
		return p, fmt.Errorf("%s: %w", source, err)
	}
	for _, kv := range settings {
		key, val, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			return p, fmt.Errorf("%s: setting %q is not key=value", source, kv)
		}
		var v any
		if json.Unmarshal([]byte(val), &v) != nil {
			v = val
		}
		fields[strings.ReplaceAll(key, "-", "_")] = v
	}
	data, err := json.Marshal(fields)
	if err != nil {
		return p, fmt.Errorf("%s: %w", source, err)
	}
	return Parse(data, source, reg)
}

// MarshalIndent is the plan as saved in plan.json.
func (p Plan) MarshalIndent() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // link names such as client:0->store stay readable
	enc.SetIndent("", "  ")
	_ = enc.Encode(p) // a Plan always encodes: plain values only
	return b.Bytes()
}
