package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/internal/jsonfile"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
)

func newRunCmd() *cobra.Command {
	var (
		planFile, scenario, out string
		fencing                 []string
		faultFlags              []string
		checkTimeout            time.Duration
		external                externalFlags
		allowDestructive        bool
		p                       = plan.Default()
		ttl, dur, work          time.Duration
		think, retry, timeout   time.Duration
		waitTimeout, minLag     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a plan (from flags, a plan file or a catalog scenario) on real Redis and check it",
		Long: `Run starts the servers, runs the clients and faults, records every operation, checks
the history (P1 mutual exclusion, P2 resource safety, P3 fence monotonicity, L1 progress;
with workload "jobs" also P4 at most once and P5 at least once)
and writes a run directory per fencing mode. Flags override the plan file or scenario.

Exit status: 0 no violation, 1 violation found, 2 error, 3 a checker timed out.`,
		Example: `  locklab run --scenario pause-past-ttl --fencing off,full
  locklab run --impl fenced --clients 4 --ttl 300ms --fault client-pause:at=0s,duration=1s,target=client:0
  locklab run --plan my-plan.json --out runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			var scrub *access.Scrubber // the secrets known: none reaches a message
			defer func() { err = scrubError(err, scrub) }()
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			base, source, err := basePlan(planFile, scenario, reg)
			if err != nil {
				return &statusError{exitError, err}
			}
			// Without --topology, --impl plays the plan where the matrix would; a --topology it
			// cannot run on stays an error naming the flag, and external servers stay as given.
			var move *plan.TopologyMove
			if fs := cmd.Flags(); fs.Changed("impl") && !fs.Changed("topology") && !fs.Changed("external-lock") && base.External == nil {
				base, move = base.OnImpl(reg, p.Impl)
			}
			p.WaitTimeout, p.MinReplicasMaxLag = plan.D(waitTimeout), plan.D(minLag)
			pl, err := overlayFlags(cmd.Flags(), base, p, ttl, dur, work, think, retry, timeout, faultFlags)
			if err != nil {
				return &statusError{exitError, err}
			}
			// The external servers before the plan is resolved: the plan records them.
			backend, scrub, err := externalBackend(cmd.Flags(), &pl, external, source)
			if err != nil {
				return &statusError{exitError, err}
			}
			if len(fencing) == 0 {
				fencing = []string{pl.Fencing}
			}
			plans := make([]*plan.Resolved, len(fencing))
			for i, mode := range fencing {
				if plans[i], err = pl.WithFencing(strings.TrimSpace(mode)).Resolve(reg); err != nil {
					return &statusError{exitError, placeError(err, cmd.Flags(), source, planFile)}
				}
			}
			if move != nil { // the first line says where the plan's topology came from
				whose := cmp.Or(map[string]string{"defaults": "the default"}[source], strings.TrimPrefix(source, "scenario ")+"'s")
				fmt.Fprintln(cmd.ErrOrStderr(), move.Header(whose, pl.Impl))
			}
			opts := runner.Options{CheckTimeout: checkTimeout, AllowDestructive: allowDestructive}
			if backend != nil {
				defer backend.Close()
				opts.Backend = backend
			}
			reports, err := runAll(cmd, plans, out, opts)
			if len(reports) > 0 {
				printReports(cmd.OutOrStdout(), pl, reports)
			}
			if err != nil {
				return err
			}
			return verdictStatus(results(reports)...)
		},
	}
	f := cmd.Flags()
	f.StringVar(&planFile, "plan", "", "plan file (JSON) to start from")
	f.StringVar(&scenario, "scenario", "", "catalog scenario to start from (see locklab list)")
	f.StringVar(&p.Impl, "impl", p.Impl, "lock implementation (see locklab list)")
	f.StringVar(&p.Topology, "topology", p.Topology, "lock service topology: single, nodes[:N], replicated[:N] (primary, N-1 replicas, three Sentinels), etcd[:N], zookeeper[:N] (an etcd cluster or ZooKeeper ensemble, default 3 members) or cluster[:P[xR]] (Redis Cluster: P primaries, R replicas each; default 3x1) (default: the plan's, mapped as the matrix maps it when --impl cannot run on it)")
	f.StringVar(&p.Backend, "backend", "", `what runs the servers: "process" (local redis-server processes, the default) or "docker" (containers of locklab/redis, built by make docker-image; DOCKER_HOST is honoured)`)
	f.IntVar(&p.Clients, "clients", p.Clients, "concurrent clients")
	f.IntVar(&p.Keys, "keys", p.Keys, "lock keys")
	f.DurationVar(&ttl, "ttl", p.TTL.D(), "lease duration")
	f.DurationVar(&dur, "duration", p.Duration.D(), "how long clients start new critical sections")
	f.DurationVar(&work, "work", p.Work.D(), "work in the critical section between read and write")
	f.DurationVar(&think, "think", p.Think.D(), "time between a release and the next acquire")
	f.DurationVar(&retry, "retry", p.Retry.D(), "mean delay after a refused acquire")
	f.DurationVar(&timeout, "timeout", p.Timeout.D(), "per-operation network timeout")
	f.BoolVar(&p.Careless, "careless", false, "clients skip the lease validity check before touching the store")
	f.Float64Var(&p.Extend, "extend", 0, "probability (0-1) that a critical section extends its lease once, halfway through its work")
	f.Int64Var(&p.Seed, "seed", p.Seed, "seed every random choice derives from")
	f.StringSliceVar(&fencing, "fencing", nil, "fencing mode(s) of the store: off, writes, full; a list runs the plan once per mode, side by side")
	f.StringArrayVar(&faultFlags, "fault", nil, "fault KIND:key=value,... with keys at, duration, target, point, trigger, latency, jitter, direction, offset, rate, mode (repeatable; see locklab list)")
	f.StringVar(&p.Persistence, "persistence", "", "lock servers' persistence: none, aof-everysec, aof-always")
	f.StringVar(&p.ServerClock, "server-clock", "", `"faketime" runs the lock servers under libfaketime (for server-clock faults)`)
	f.IntVar(&p.WaitReplicas, "wait-replicas", 0, "WAIT for this many replicas after every grant and extension; a grant they did not acknowledge is released and refused (replicated topology or Redis Cluster)")
	f.DurationVar(&waitTimeout, "wait-timeout", 0, "with --wait-replicas: how long each WAIT may block (less than --timeout)")
	f.IntVar(&p.MinReplicasToWrite, "min-replicas-to-write", 0, "every data node's min-replicas-to-write: a primary with fewer replicas keeping up refuses writes (replicated topology or Redis Cluster)")
	f.DurationVar(&minLag, "min-replicas-max-lag", 0, "with --min-replicas-to-write: the data nodes' min-replicas-max-lag, whole seconds (default Redis's 10s)")
	f.StringVar(&out, "out", "out", "directory for run directories")
	f.StringArrayVar(&external.lock, "external-lock", nil, "run against an existing lock server instead of starting Redis (repeatable, one server each, taken whole): host:port, redis://[user[:password]@]host:port[/db] or rediss://... (a password left out comes from $LOCKLAB_REDIS_PASSWORD)")
	f.StringVar(&external.store, "external-store", "", "with --external-lock: the existing server for the protected store (host:port or URL, as --external-lock)")
	f.StringVar(&external.ca, "external-ca", "", "CA bundle (PEM) that rediss:// servers' certificates are checked against (default: the system's)")
	f.BoolVar(&allowDestructive, "allow-destructive", false, "let faults that can destroy data (pause, crash, clock, TTL shaving) touch external servers")
	f.DurationVar(&checkTimeout, "check-timeout", 0, "linearizability checker timeout per property (0: default); a timeout is reported as unknown, never as a pass")
	return cmd
}

// runAll runs resolved plans one after the other, each into its own directory under
// out. The report of a run that ended early (interrupted, failed) is returned too, with
// the error: its history was saved and checked.
func runAll(cmd *cobra.Command, plans []*plan.Resolved, out string, opts runner.Options) ([]runner.Report, error) {
	stamp := time.Now().Format("20060102-150405")
	reports := make([]runner.Report, 0, len(plans))
	for _, r := range plans {
		pl := r.Plan
		name := pl.Name
		if name == "" {
			name = "run"
		}
		opts.Dir = filepath.Join(out, fmt.Sprintf("%s-%s-fencing-%s", stamp, name, pl.Fencing))
		fmt.Fprintf(cmd.ErrOrStderr(), "running %s with fencing %s for %s ...\n", name, pl.Fencing, pl.Duration.D())
		rep, err := runner.Run(cmd.Context(), r, opts)
		if errors.Is(err, runner.ErrEndedEarly) {
			reports = append(reports, rep)
			return reports, &statusError{exitError, fmt.Errorf("run %s with fencing %s: %w; evidence in %s", name, pl.Fencing, err, opts.Dir)}
		}
		if err != nil {
			return reports, &statusError{exitError, fmt.Errorf("run %s with fencing %s: %w", name, pl.Fencing, err)}
		}
		reports = append(reports, rep)
	}
	return reports, nil
}

// basePlan is the plan flags are laid over: a file, a scenario, or the defaults.
func basePlan(planFile, scenario string, reg *lockimpl.Registry) (plan.Plan, string, error) {
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

// overlayFlags copies onto base every flag the user set explicitly.
func overlayFlags(fs *pflag.FlagSet, base, fl plan.Plan, ttl, dur, work, think, retry, timeout time.Duration, faultFlags []string) (plan.Plan, error) {
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
			f, err := parseFaultFlag(s)
			if err != nil {
				return base, fmt.Errorf("flag --fault %q: %w", s, err)
			}
			base.Faults = append(base.Faults, f)
		}
	}
	return base, nil
}

// parseFaultFlag reads KIND:at=D,duration=D,target=T,point=P.
func parseFaultFlag(s string) (plan.FaultSpec, error) {
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
		case "at", "duration", "latency", "jitter", "offset":
			d, err := time.ParseDuration(v)
			if err != nil {
				return f, fmt.Errorf("parameter %s: bad duration %q", k, v)
			}
			*map[string]*plan.Duration{"at": &f.At, "duration": &f.Duration, "latency": &f.Latency, "jitter": &f.Jitter, "offset": &f.Offset}[k] = plan.D(d)
		case "rate":
			r, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return f, fmt.Errorf("parameter rate: bad number %q", v)
			}
			f.Rate = r
		case "target", "point", "trigger", "direction", "mode", "cut", "until":
			*map[string]*string{"target": &f.Target, "point": &f.Point, "trigger": &f.Trigger, "direction": &f.Direction, "mode": &f.Mode, "cut": &f.Cut, "until": &f.Until}[k] = v
		default:
			return f, fmt.Errorf("unknown parameter %q (want at, duration, target, point, trigger, latency, jitter, direction, offset, rate, mode, cut, until)", k)
		}
	}
	return f, nil
}

// placeError says where a bad plan value came from: a flag, or the plan file's line.
func placeError(err error, fs *pflag.FlagSet, source, planFile string) error {
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

func results(reps []runner.Report) []linearizability.Result {
	out := make([]linearizability.Result, len(reps))
	for i, r := range reps {
		out[i] = r.Result
	}
	return out
}

// verdictStatus turns results into the exit status: any violation wins over unknown.
func verdictStatus(rs ...linearizability.Result) error {
	unknown := false
	for _, r := range rs {
		if r.Violation() {
			return &statusError{code: exitViolation}
		}
		unknown = unknown || r.Unknown()
	}
	if unknown {
		return &statusError{code: exitUnknown}
	}
	return nil
}

// printReports prints the verdicts of the runs side by side, then every explanation.
func printReports(w io.Writer, pl plan.Plan, reps []runner.Report) {
	name := pl.Name
	if name == "" {
		name = "run"
	}
	fmt.Fprintf(w, "\n%s: impl %s, %d clients, %d keys, ttl %s, %d faults\n", name, pl.Impl, pl.Clients, pl.Keys, pl.TTL.D(), len(pl.Faults))
	fmt.Fprintf(w, "%-26s", "")
	for _, r := range reps {
		fmt.Fprintf(w, "%-22s", "fencing "+r.Plan.Fencing)
	}
	fmt.Fprintln(w)
	for _, prop := range linearizability.AllProperties() {
		if (prop == linearizability.P4 || prop == linearizability.P5) && pl.Workload != plan.WorkloadJobs {
			continue // the job-queue properties, n/a on any other workload
		}
		fmt.Fprintf(w, "%-26s", fmt.Sprintf("%s %s", prop, prop.Name()))
		for _, r := range reps {
			pr, _ := r.Result.Property(prop)
			fmt.Fprintf(w, "%-22s", display(pr.Verdict))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%-26s", "operations")
	for _, r := range reps {
		fmt.Fprintf(w, "%-22d", r.Ops)
	}
	fmt.Fprintln(w)
	for _, r := range reps {
		fmt.Fprintf(w, "\nfencing %s: report %s\n", r.Plan.Fencing, filepath.Join(r.Dir, runner.HTMLFile))
		printExplanations(w, "  ", r.Result)
	}
}

// display makes a violation stand out in a table of verdicts.
func display(v linearizability.Verdict) string {
	if v == linearizability.Illegal {
		return "ILLEGAL"
	}
	return string(v)
}

// printExplanations prints why each property is illegal or undecided.
func printExplanations(w io.Writer, indent string, r linearizability.Result) {
	for _, pr := range r.Properties {
		if pr.Explanation != "" && (pr.Verdict == linearizability.Illegal || pr.Verdict == linearizability.Unknown) {
			fmt.Fprintf(w, "%s%s %s: %s\n", indent, pr.Property, display(pr.Verdict), pr.Explanation)
		}
	}
}
