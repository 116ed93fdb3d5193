// Package planflags is the command line's plan: the flags that make one (a plan file or
// a catalog scenario, and every field a flag overrides), laid over the plan in one way
// for every command that runs one (locklab run, locklab soak), and errors that name the
// flag or the file's line a bad value came from.
package planflags

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/locklab/locklab/internal/jsonfile"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
)

// Flags are a plan's flags once registered; P holds the plain fields' values.
type Flags struct {
	PlanFile, Scenario                    string
	P                                     plan.Plan
	ttl, dur, work, think, retry, timeout time.Duration
	waitTimeout, minLag                   time.Duration
	faults                                []string
}

// Register adds the plan's flags to f, with the defaults of plan.Default.
func Register(f *pflag.FlagSet) *Flags {
	fl := &Flags{P: plan.Default()}
	p := &fl.P
	f.StringVar(&fl.PlanFile, "plan", "", "plan file (JSON) to start from")
	f.StringVar(&fl.Scenario, "scenario", "", "catalog scenario to start from (see locklab list)")
	f.StringVar(&p.Impl, "impl", p.Impl, "lock implementation (see locklab list)")
	f.StringVar(&p.Topology, "topology", p.Topology, "lock service topology: single, nodes[:N], replicated[:N] (primary, N-1 replicas, three Sentinels), etcd[:N], zookeeper[:N] (an etcd cluster or ZooKeeper ensemble, default 3 members) or cluster[:P[xR]] (Redis Cluster: P primaries, R replicas each; default 3x1) (default: the plan's, mapped as the matrix maps it when --impl cannot run on it)")
	f.StringVar(&p.Backend, "backend", "", `what runs the servers: "process" (local redis-server processes, the default) or "docker" (containers of locklab/redis, built by make docker-image; DOCKER_HOST is honoured)`)
	f.IntVar(&p.Clients, "clients", p.Clients, "concurrent clients")
	f.IntVar(&p.Keys, "keys", p.Keys, "lock keys")
	f.DurationVar(&fl.ttl, "ttl", p.TTL.D(), "lease duration")
	f.DurationVar(&fl.dur, "duration", p.Duration.D(), "how long clients start new critical sections")
	f.DurationVar(&fl.work, "work", p.Work.D(), "work in the critical section between read and write")
	f.DurationVar(&fl.think, "think", p.Think.D(), "time between a release and the next acquire")
	f.DurationVar(&fl.retry, "retry", p.Retry.D(), "mean delay after a refused acquire")
	f.DurationVar(&fl.timeout, "timeout", p.Timeout.D(), "per-operation network timeout")
	f.BoolVar(&p.Careless, "careless", false, "clients skip the lease validity check before touching the store")
	f.Float64Var(&p.Extend, "extend", 0, "probability (0-1) that a critical section extends its lease once, halfway through its work")
	f.Int64Var(&p.Seed, "seed", p.Seed, "seed every random choice derives from")
	f.StringArrayVar(&fl.faults, "fault", nil, "fault KIND:key=value,... with keys at, duration, target, point, trigger, latency, jitter, direction, offset, rate, mode, every (repeatable; see locklab list)")
	f.StringVar(&p.Persistence, "persistence", "", "lock servers' persistence: none, aof-everysec, aof-always")
	f.StringVar(&p.ServerClock, "server-clock", "", `"faketime" runs the lock servers under libfaketime (for server-clock faults)`)
	f.IntVar(&p.WaitReplicas, "wait-replicas", 0, "WAIT for this many replicas after every grant and extension; a grant they did not acknowledge is released and refused (replicated topology or Redis Cluster)")
	f.DurationVar(&fl.waitTimeout, "wait-timeout", 0, "with --wait-replicas: how long each WAIT may block (less than --timeout)")
	f.IntVar(&p.MinReplicasToWrite, "min-replicas-to-write", 0, "every data node's min-replicas-to-write: a primary with fewer replicas keeping up refuses writes (replicated topology or Redis Cluster)")
	f.DurationVar(&fl.minLag, "min-replicas-max-lag", 0, "with --min-replicas-to-write: the data nodes' min-replicas-max-lag, whole seconds (default Redis's 10s)")
	return fl
}

// Base is the plan the flags are laid over: --plan's file, --scenario's, or the
// defaults, and where it came from ("defaults", "scenario NAME" or the file).
func (fl *Flags) Base(reg *lockimpl.Registry) (plan.Plan, string, error) {
	planFile, scenario := fl.PlanFile, fl.Scenario
	switch {
	case planFile != "" && scenario != "":
		return plan.Plan{}, "", errors.New("flags --plan and --scenario exclude each other")
	case planFile != "":
		p, err := plan.Read(planFile, reg)
		return p, planFile, err
	case scenario != "":
		p, err := plan.Scenario(scenario, reg)
		if err != nil {
			return p, "", fmt.Errorf("flag --scenario: %w", err)
		}
		return p, "scenario " + scenario, nil
	}
	return plan.Default(), "defaults", nil
}

// Overlay copies onto base every flag of fs the user set explicitly.
func (flags *Flags) Overlay(fs *pflag.FlagSet, base plan.Plan) (plan.Plan, error) {
	fl := flags.P
	fl.WaitTimeout, fl.MinReplicasMaxLag = plan.D(flags.waitTimeout), plan.D(flags.minLag)
	ttl, dur, work, think, retry, timeout := flags.ttl, flags.dur, flags.work, flags.think, flags.retry, flags.timeout
	faultFlags := flags.faults
	set := func(name string, apply func()) {
		if fs.Changed(name) {
			apply()
		}
	}
	set("impl", func() { base.Impl = fl.Impl })
	set("topology", func() { base.Topology = fl.Topology })
	set("backend", func() { base.Backend = fl.Backend })
	set("clients", func() { base.Clients = fl.Clients })
	set("keys", func() { base.Keys = fl.Keys })
	set("careless", func() { base.Careless = fl.Careless })
	set("extend", func() { base.Extend = fl.Extend })
	set("persistence", func() { base.Persistence = fl.Persistence })
	set("server-clock", func() { base.ServerClock = fl.ServerClock })
	set("wait-replicas", func() { base.WaitReplicas = fl.WaitReplicas })
	set("wait-timeout", func() { base.WaitTimeout = fl.WaitTimeout })
	set("min-replicas-to-write", func() { base.MinReplicasToWrite = fl.MinReplicasToWrite })
	set("min-replicas-max-lag", func() { base.MinReplicasMaxLag = fl.MinReplicasMaxLag })
	set("seed", func() { base.Seed = fl.Seed })
	set("ttl", func() { base.TTL = plan.D(ttl) })
	set("duration", func() { base.Duration = plan.D(dur) })
	set("work", func() { base.Work = plan.D(work) })
	set("think", func() { base.Think = plan.D(think) })
	set("retry", func() { base.Retry = plan.D(retry) })
	set("timeout", func() { base.Timeout = plan.D(timeout) })
	if fs.Changed("fault") {
		base.Faults = nil
		for _, s := range faultFlags {
			f, err := ParseFault(s)
			if err != nil {
				return base, fmt.Errorf("flag --fault %q: %w", s, err)
			}
			base.Faults = append(base.Faults, f)
		}
	}
	return base, nil
}

// ParseFault reads a --fault flag: KIND:at=D,duration=D,target=T,point=P,...
func ParseFault(s string) (plan.FaultSpec, error) {
	kind, params, _ := strings.Cut(s, ":")
	f := plan.FaultSpec{Kind: kind}
	if kind == "" {
		return f, errors.New("missing fault kind")
	}
	if params == "" {
		return f, nil
	}
	for _, kv := range strings.Split(params, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return f, fmt.Errorf("parameter %q: want key=value", kv)
		}
		switch k {
		case "at", "duration", "latency", "jitter", "offset", "every":
			d, err := time.ParseDuration(v)
			if err != nil {
				return f, fmt.Errorf("parameter %s: bad duration %q", k, v)
			}
			*map[string]*plan.Duration{"at": &f.At, "duration": &f.Duration, "latency": &f.Latency, "jitter": &f.Jitter, "offset": &f.Offset, "every": &f.Every}[k] = plan.D(d)
		case "rate":
			r, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return f, fmt.Errorf("parameter rate: bad number %q", v)
			}
			f.Rate = r
		case "target", "point", "trigger", "direction", "mode", "cut", "until":
			*map[string]*string{"target": &f.Target, "point": &f.Point, "trigger": &f.Trigger, "direction": &f.Direction, "mode": &f.Mode, "cut": &f.Cut, "until": &f.Until}[k] = v
		default:
			return f, fmt.Errorf("unknown parameter %q (want at, duration, target, point, trigger, latency, jitter, direction, offset, rate, mode, cut, until, every)", k)
		}
	}
	return f, nil
}

// Place says where a bad plan value came from: a flag of fs, or the plan file's line
// (source is Base's).
func (fl *Flags) Place(err error, fs *pflag.FlagSet, source string) error {
	planFile := fl.PlanFile
	var fe *plan.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	field, _, _ := strings.Cut(fe.Field, "[")
	field = strings.ReplaceAll(field, "_", "-") // plan field server_clock is flag --server-clock
	switch {
	case field == "faults" && fs.Changed("fault"):
		fe.Source = "flag --fault"
	case fs.Lookup(field) != nil && fs.Changed(field):
		fe.Source, fe.Field = "flag --"+field, "" // the flag names the field
	case planFile != "":
		if data, rerr := os.ReadFile(planFile); rerr == nil {
			fe.Source = planFile
			fe.Line = jsonfile.FieldLine(data, fe.Field)
		}
	default:
		fe.Source = source
	}
	return fe
}
