package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/cluster/etcd"
	"github.com/locklab/locklab/cluster/faketime"
	"github.com/locklab/locklab/cluster/zookeeper"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/internal/jsonfile"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/linearizability/online"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/timeline"
	"github.com/locklab/locklab/workload"
)

// Files of a run directory besides histories.HistoryFile and histories.FaultsFile.
const (
	PlanFile   = "plan.json"
	ResultFile = "result.json"
	HTMLFile   = "history.html"
	LogsDir    = "logs"
)

// Title names a run for people: its plan, implementation and fencing mode.
func Title(p plan.Plan) string {
	name := p.Name
	if name == "" {
		name = "plan"
	}
	return fmt.Sprintf("%s · %s · fencing %s", name, p.Impl, p.Fencing)
}

// tiltWait bounds the wait for Sentinels to leave TILT mode before a run's clock starts:
// the 30 s they stay in it after a stall, and some.
const tiltWait = 40 * time.Second

// InterruptedCheckTimeout bounds the checker per property on the history of an
// interrupted run: whoever pressed Ctrl-C wants the evidence now, and an undecided
// property is reported as unknown, never as held.
const InterruptedCheckTimeout = 5 * time.Second

// Errors of a run that started its clock and did not end as planned. Run returns them
// wrapped in ErrEndedEarly, with the causes: the history recorded until then is saved
// and checked all the same, and result.json says why (Report.EndedEarly).
var (
	ErrEndedEarly = errors.New("run ended early")
	// ErrInterrupted: the run's context ended before the plan did (Ctrl-C).
	ErrInterrupted = errors.New("run interrupted")
	// ErrDeadline: clients were still running at the run's hard deadline (hardDeadline)
	// and were stopped where they stood.
	ErrDeadline = errors.New("run hit its hard deadline")
)

// Options are how a plan is run, as opposed to what it runs.
type Options struct {
	Backend      cluster.Backend // nil: a process backend of its own, closed after the run
	Dir          string          // run directory to write; "" writes nothing
	CheckTimeout time.Duration   // per property; 0: linearizability's default
	Grace        time.Duration   // how long after the end clients may take to finish; 0: 10s
	// AllowDestructive lets faults that can destroy data (pause, crash, clock, TTL
	// shaving) touch external servers; without it they are refused there.
	AllowDestructive bool
	// Phases, shared by runs on one machine, keeps checks away from live runs.
	Phases *Phases
	// Slots, shared by runs on one machine, bounds the runs whose servers run at once;
	// their checks run outside it.
	Slots *Slots
	// Pictures, when set, says from a run's report whether its directory gets
	// history.html and timeline.svg: drawing them takes longer than checking a short run,
	// and a campaign keeps the directories of its failing runs only. nil: every run's.
	Pictures func(Report) bool
	// Sink, when set, receives every operation as it is recorded (from many goroutines at
	// once) and the run keeps none: a run of days in constant memory. The history that is
	// saved and checked then has the fault windows only; the sink is the evidence.
	Sink func(histories.Op)
	// Online, when set, makes a long run (see Online): the history goes to segments and
	// is checked while the run goes on. It needs Dir, and excludes Sink.
	Online *Online

	scrub *access.Scrubber // set by Run: scrubberFor(Backend)
}

// Report is what one run produced.
type Report struct {
	Plan     plan.Plan              `json:"plan"`
	Dir      string                 `json:"dir,omitempty"`
	Result   linearizability.Result `json:"result"`
	Ops      int                    `json:"ops"`
	Faults   int                    `json:"faults"`
	RunTime  time.Duration          `json:"run_time"`
	Warnings []string               `json:"warnings,omitempty"`
	// Interrupted: the run's context ended before the plan did, or its hard deadline
	// passed; Result checks the history recorded until then.
	Interrupted bool `json:"interrupted,omitempty"`
	// EndedEarly says why a run that started its clock did not end as planned (an
	// interrupt, the hard deadline, a workload error such as a lock client that failed
	// to close, faults that did not heal): the error Run returned. "" when it did.
	EndedEarly string `json:"ended_early,omitempty"`
	// Stall is the longest the harness itself lagged while clients ran (its own timer,
	// or a direct PING to a server no fault acted on); Perturbed says why a stall that
	// long makes the run's verdicts about this machine rather than the lock ("" when not).
	Stall     time.Duration `json:"stall_ns"`
	Perturbed string        `json:"perturbed,omitempty"`
	// Online is a long run's checking at its end: windows checked, the largest, the
	// largest left open, violations (nil for a run checked whole).
	Online *online.Status `json:"online,omitempty"`
}

// Run runs a resolved plan on real servers, checks the history and, with opts.Dir,
// writes the run directory (plan, history, faults, result, HTML, server logs). Faults are
// always healed and servers stopped before the history is checked. A run that started its
// clock keeps its evidence whatever happens after: when ctx ends first, the hard deadline
// passes, the workload fails or faults do not heal, the history recorded so far is saved
// and checked like a whole one, the report says why (EndedEarly; Interrupted for the
// first two), and the error wraps ErrEndedEarly and the causes (ErrInterrupted,
// ErrDeadline).
func Run(ctx context.Context, r *plan.Resolved, opts Options) (rep Report, err error) {
	p := r.Plan
	rep = Report{Plan: p, Dir: opts.Dir}
	opts.scrub = scrubberFor(opts.Backend)
	opts.Sink = scrubSink(opts.Sink, opts.scrub)
	defer func() { err = opts.scrub.Error(err) }()
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return rep, fmt.Errorf("create run directory: %w", err)
		}
		if err := os.WriteFile(filepath.Join(opts.Dir, PlanFile), p.MarshalIndent(), 0o644); err != nil {
			return rep, fmt.Errorf("write plan: %w", err)
		}
	}

	if err := opts.Slots.take(ctx); err != nil {
		return rep, fmt.Errorf("waiting for a slot to run in: %w", err)
	}
	x, runErr := onServers(ctx, r, opts)
	opts.Slots.give()
	rep.Warnings = append(rep.Warnings, opts.scrub.Strings(x.warnings)...)
	if !x.clocked {
		return rep, runErr // nothing ran: no evidence to keep
	}
	h := x.history
	scrubHistory(&h, opts.scrub)
	rep.Interrupted = errors.Is(runErr, ErrInterrupted) || errors.Is(runErr, ErrDeadline)
	if runErr != nil {
		rep.EndedEarly = opts.scrub.String(runErr.Error())
	}
	rep.Stall, rep.Perturbed = x.stall, perturbed(x.stall, x.where, p.TTL.D())
	rep.Ops, rep.Faults = len(h.Ops), len(h.Faults)
	rep.RunTime = time.Duration(lastReturn(h))

	if x.online != nil {
		rep.Ops, rep.Result, rep.RunTime, rep.Online = x.online.ops, x.online.result, x.ran, &x.online.status
		err = errors.Join(x.online.err, keepOnline(opts, h, &rep))
	} else {
		copts := linearizability.Options{Timeout: opts.CheckTimeout}
		if errors.Is(runErr, ErrInterrupted) {
			copts.Timeout = InterruptedCheckTimeout
			if opts.CheckTimeout > 0 {
				copts.Timeout = min(opts.CheckTimeout, InterruptedCheckTimeout)
			}
		}
		err = keep(opts, h, &rep, copts)
	}
	if runErr != nil {
		return rep, errors.Join(fmt.Errorf("%w after %s (the history recorded until then is kept and checked): %w",
			ErrEndedEarly, x.ran.Round(time.Millisecond), runErr), err)
	}
	return rep, err
}

// keep saves the history into the run directory, checks it and writes the result.
func keep(opts Options, h histories.History, rep *Report, copts linearizability.Options) error {
	if opts.Dir != "" {
		if err := histories.Save(opts.Dir, h); err != nil {
			return err
		}
	}
	endCheck := opts.Phases.check()
	defer endCheck()
	var err error
	rep.Result, err = linearizability.Check(h, copts)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if opts.Dir != "" {
		return writeResult(opts, h, rep, copts)
	}
	return nil
}

// onServers starts the plan's servers on opts.Backend (or a process backend of its own),
// executes the plan on them, and ends them before it returns: their logs are copied into
// the run directory, and they are killed, not shut down, since nothing reads them after.
func onServers(ctx context.Context, r *plan.Resolved, opts Options) (x executed, err error) {
	p := r.Plan
	backend := opts.Backend
	if backend == nil {
		nb, berr := NewBackend(ctx, p.Backend)
		if berr != nil {
			return x, berr
		}
		defer closeInto(&err, nb.Close)
		backend = nb
	} else if p.Backend != "" && p.External == nil && p.Backend != backend.Name() {
		return x, fmt.Errorf("plan wants backend %s, but the run was given the %s backend", p.Backend, backend.Name())
	}
	cl, err := cluster.Start(ctx, backend, r.Topology, cluster.Options{
		Persistence: r.Persistence, ServerClock: p.ServerClock, ReplicaArgs: r.MinReplicas.Args(),
	})
	if err != nil {
		return x, fmt.Errorf("start %s topology: %w", r.Topology, err)
	}
	defer closeInto(&err, cl.Discard)
	if opts.Dir != "" {
		// Logs are copied last, after faults healed, whatever the run's outcome.
		defer func() {
			if cerr := cl.CopyLogs(filepath.Join(opts.Dir, LogsDir), opts.scrub); cerr != nil {
				x.warnings = append(x.warnings, cerr.Error())
			}
		}()
	}
	return execute(ctx, r, cl, opts)
}

// writeResult writes result.json into the run directory and, for a run opts wants
// pictures of, history.html (Porcupine's visualisation, checked with copts) and
// timeline.svg.
func writeResult(opts Options, h histories.History, rep *Report, copts linearizability.Options) error {
	pictures := opts.Pictures == nil || opts.Pictures(*rep)
	if pictures {
		res, err := linearizability.WriteHTML(h, rep.Result, filepath.Join(opts.Dir, HTMLFile), copts)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		rep.Result = res
	}
	if err := jsonfile.Write(filepath.Join(opts.Dir, ResultFile), rep); err != nil {
		return err
	}
	if !pictures {
		return nil
	}
	pic := timeline.Run{History: h, Result: rep.Result, Title: Title(rep.Plan)}
	return timeline.Write(filepath.Join(opts.Dir, timeline.File), pic)
}

// executed is what execute returns: whether the plan's clock started (then the recorded
// history is the evidence, whole or cut short, whatever error comes with it), the
// harness's longest stall while clients ran and where it was, and what went wrong
// without spoiling the run.
type executed struct {
	clocked  bool
	ran      time.Duration // from the start of the plan's clock until the clients stopped
	history  histories.History
	stall    time.Duration
	where    string
	warnings []string
	online   *onlineResult // a long run's: its checker's verdicts, operations and errors
}

type onlineResult struct {
	result linearizability.Result
	status online.Status
	ops    int
	err    error
}

// execute runs the clients and the fault schedule, then removes the run's keys from
// servers locklab did not start.
func execute(ctx context.Context, r *plan.Resolved, cl *cluster.Cluster, opts Options) (executed, error) {
	p := r.Plan
	meta := histories.Meta{Fencing: string(r.Fencing), TTL: p.TTL.D(), Impl: r.Impl.Name, Seed: p.Seed}
	meta.Topology, meta.Renews, meta.Persistence = cl.Topology.String(), r.Impl.Renews, string(r.Persistence)
	switch cl.Topology.Kind { // Redis expires a key on the first access after its TTL: never late
	case cluster.Etcd:
		meta.ExpiryLag = etcd.RevokeTick
	case cluster.ZooKeeper:
		meta.ExpiryLag = zookeeper.ExpiryLag
	}
	for _, n := range cl.Lock {
		meta.Servers = append(meta.Servers, n.Name())
	}
	rec := histories.NewRecorder(meta)
	var lv *live
	switch {
	case opts.Online != nil && opts.Sink != nil:
		return executed{}, errors.New("a run takes a sink or online checking, not both")
	case opts.Online != nil:
		var err error
		if lv, err = startLive(opts, p, meta); err != nil {
			return executed{}, err
		}
		rec = histories.NewStreamingRecorder(meta, scrubSink(lv.order.Add, opts.scrub))
		lv.rec = rec
		defer lv.abandon() // a no-op once finished
	case opts.Sink != nil:
		rec = histories.NewStreamingRecorder(meta, opts.Sink)
	}
	env := faults.NewEnv(cl, rec, p.Clients)
	env.AllowDestructive = opts.AllowDestructive
	gates := env.Gates

	// Every client's links exist before the faults, so that fault targets match them.
	eps := make([]cluster.Endpoints, p.Clients)
	for i := range eps {
		var err error
		if eps[i], err = cl.Endpoints(i); err != nil {
			return executed{}, fmt.Errorf("endpoints of client %d: %w", i, err)
		}
	}
	lockers := make([]lockimpl.Locker, p.Clients)
	ns := namespace()
	env.LockKey = workload.LockKey(ns, workload.KeyName(0))
	wcfg := workload.Config{
		Clients: p.Clients, Keys: p.Keys, TTL: p.TTL.D(), Work: p.Work.D(), Think: p.Think.D(),
		Retry: p.Retry.D(), Fencing: r.Fencing, Careless: p.Careless,
		Extend:  p.Extend,
		Timeout: p.Timeout.D(), Seed: p.Seed, Namespace: ns, StoreAddr: func(client int) string { return eps[client].Store }, Rec: rec,
		Hook: gates.Reach, Clock: env.ClientClock,
		NewLocker: func(client int) (lockimpl.Locker, error) { return lockers[client], nil }, // Run closes them
		Jobs:      p.JobsConfig(cl.Store.Addr()),
	}
	wcfg.Access = storeAccess(cl, eps)
	if err := wcfg.Validate(); err != nil {
		return executed{}, fmt.Errorf("workload: %w", err)
	}
	// Lockers are built before the clock of the plan starts: a subprocess client takes a
	// while to start, and that time must not come out of the run or shift its faults.
	closeLockers := func() {
		for _, l := range lockers {
			if l != nil {
				l.Close()
			}
		}
	}
	logs := clientLogs(opts.Dir, p.Clients)
	defer closeClientLogs(logs)
	fakeClocks, err := clientFakeClocks(p, env, opts.Dir)
	if err != nil {
		return executed{}, err
	}
	err = buildLockers(lockers, func(client int) (lockimpl.Locker, error) {
		ep := eps[client]
		return r.Impl.New(lockimpl.Config{
			Log:       logs[client].writer(),
			Addrs:     ep.Lock,
			Sentinels: ep.Sentinels,
			Master:    ep.Master,
			Cluster:   ep.Cluster,
			Via:       ep.Via,
			Access:    ep.Access,
			Clock:     env.ClientClock(client),
			Timeout:   p.Timeout.D(),
			Options:   r.Options,
			Wait:      r.Wait,
			FakeClock: fakeClocks[client],
			Scrub:     opts.scrub,
			Step: func(ctx context.Context, step string) error {
				return gates.Reach(ctx, client, step)
			},
		})
	})
	if err != nil {
		closeLockers()
		return executed{}, err
	}
	procs := make([]faults.ClientProcess, len(lockers))
	for i, l := range lockers {
		if cp, ok := l.(faults.ClientProcess); ok {
			procs[i] = cp
		} else if fakeClocks[i] != nil {
			closeLockers()
			return executed{}, fmt.Errorf("plan client_clock %s: %s runs inside locklab, whose Go runtime reads the clock without libc: libfaketime cannot move it (client-clock still moves the clock the harness reads for it; leave client_clock out)",
				cluster.ClockFaketime, p.Impl)
		}
	}
	gates.SetProcesses(procs)
	// The run is live from here until its faults are healed: checks keep away (Phases),
	// and the plan's clock and its hard deadline start only once they have.
	endLive := sync.OnceFunc(opts.Phases.execute())
	defer endLive()
	if len(cl.Sentinels) > 0 {
		// A stall while the servers waited to go live puts the Sentinels in TILT mode,
		// where they would start no failover: wait it out before the plan's clock starts.
		tiltCtx, cancel := context.WithTimeout(ctx, tiltWait)
		_, err := cl.AwaitNoTilt(tiltCtx)
		cancel()
		if err != nil {
			closeLockers()
			return executed{}, err
		}
	}
	hard := hardDeadline(p, r.Faults, opts.Grace)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	clock := time.Now()
	sched, err := faults.Start(runCtx, env, r.Faults)
	if err != nil {
		closeLockers()
		return executed{}, err
	}
	go func() { // the hard deadline, moved on by the time triggers held clients (see faults.Schedule.Held)
		for end := hard; ; {
			select {
			case <-runCtx.Done():
				return
			case <-time.After(time.Until(clock.Add(end))):
			}
			if e := hard + sched.Held(); e > end {
				end = e
				continue
			}
			cancel()
			return
		}
	}()
	stop := make(chan struct{})
	// At the plan's duration, or once no fault holds a client in a strike under way.
	timer := time.AfterFunc(p.Duration.D(), func() { sched.AwaitSettled(runCtx); close(stop) })
	defer timer.Stop()

	mon := startMonitor(cl, rec.Acting)
	start := time.Now()
	pumped, pumpDone := make(chan struct{}), make(chan struct{})
	if lv != nil {
		go func() { lv.pump(rec, pumped); close(pumpDone) }()
	} else {
		close(pumpDone)
	}
	werr := workload.Run(runCtx, stop, wcfg)
	close(pumped)
	<-pumpDone // finish hands out the rest: no step of the pump may come after it
	ran := time.Since(start)
	stall, where := mon.end()
	herr := sched.Stop()
	if herr == nil {
		herr = faults.VerifyHealed(context.Background(), env)
	}
	endLive()
	x := executed{clocked: true, ran: ran, stall: stall, where: where, history: rec.History()}
	if lv != nil {
		res, st, err := lv.finish(x.history)
		x.online = &onlineResult{res, st, int(st.Ops), err}
	}
	if _, err := removeKeys(context.Background(), cl, ns); err != nil {
		x.warnings = append(x.warnings, err.Error())
	}
	return x, endedEarly(ctx, runCtx, hard, werr, herr)
}

// endedEarly is why a run whose clock started did not end as planned, nil when it did:
// ctx ended (interrupted: clients were stopped where they stood, and workload errors that
// follow from that are no findings), the hard deadline passed, the workload failed, or
// faults did not heal. Every cause is named, in that order.
func endedEarly(ctx, runCtx context.Context, hard time.Duration, werr, herr error) error {
	var causes []error
	switch {
	case ctx.Err() != nil:
		causes, werr = append(causes, fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))), nil
	case runCtx.Err() != nil:
		causes = append(causes, fmt.Errorf("%w: clients still running %s after the plan's clock started", ErrDeadline, hard))
	}
	if werr != nil {
		causes = append(causes, fmt.Errorf("workload: %w", werr))
	}
	if herr != nil {
		causes = append(causes, fmt.Errorf("healing: %w", herr))
	}
	if len(causes) == 0 {
		return nil
	}
	return causesError(causes)
}

// causesError is several causes on one line (errors.Join's lines would break
// result.json's ended_early apart for people), each one still matched by errors.Is.
type causesError []error

func (c causesError) Error() string {
	msgs := make([]string, len(c))
	for i, err := range c {
		msgs[i] = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return strings.Join(msgs, "; ")
}

func (c causesError) Unwrap() []error { return c }

// buildLockers fills lockers, one per client, building them all at once: a client that
// runs as a process of its own (Node.js, Python) takes a tenth of a second or more to
// start, and eight of them one after the other would take most of a second. On error
// the lockers that were built are left in place for the caller to close.
func buildLockers(lockers []lockimpl.Locker, build func(client int) (lockimpl.Locker, error)) error {
	errs := make([]error, len(lockers))
	var wg sync.WaitGroup
	for i := range lockers {
		wg.Go(func() {
			l, err := build(i)
			if err != nil {
				errs[i] = fmt.Errorf("locker for client %d: %w", i, err)
				return
			}
			lockers[i] = l
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// hardDeadline is how long a run may take from the start of its clock: room for the
// longest fault to end (a failover's promotion too) and for clients to finish (grace; 0: 10 s).
// Job-queue workers drain the queue first, and a job stalled past its visibility timeout
// comes back only after it: the stall and two visibility timeouts more.
func hardDeadline(p plan.Plan, fs []*faults.Planned, grace time.Duration) time.Duration {
	if grace == 0 {
		grace = 10 * time.Second
	}
	if j := p.Jobs; j != nil && p.Workload == plan.WorkloadJobs && j.Stall != nil {
		grace += 2*j.Visibility.D() + j.Stall.After.D()
	}
	hard := p.Duration.D() + grace
	for _, f := range fs {
		hard = max(hard, f.Span()+grace)
	}
	return hard
}

func lastReturn(h histories.History) int64 {
	var last int64
	for _, op := range h.Ops {
		if op.Outcome != histories.Unknown {
			last = max(last, op.Return)
		}
	}
	return last
}

func closeInto(err *error, closeFn func() error) {
	if cerr := closeFn(); cerr != nil && *err == nil {
		*err = cerr
	}
}

// namespace is a fresh key prefix for one run: runs against the same (external) servers
// must not meet each other's locks and values.
func namespace() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "ll" + hex.EncodeToString(b[:]) + ":"
}

// clientFakeClocks are the clients' wall clocks under libfaketime when the plan asks
// for them (client_clock faketime), one file per client in the run directory (a
// temporary one without it), mirrored by the client-clock faults; else nils.
func clientFakeClocks(p plan.Plan, env *faults.Env, dir string) ([]*faketime.Clock, error) {
	out := make([]*faketime.Clock, p.Clients)
	if p.ClientClock != cluster.ClockFaketime {
		return out, nil
	}
	if dir == "" {
		return nil, fmt.Errorf("plan client_clock %s: no run directory for the clock files", cluster.ClockFaketime)
	}
	if err := os.MkdirAll(filepath.Join(dir, "clocks"), 0o755); err != nil {
		return nil, fmt.Errorf("client clocks: %w", err)
	}
	for i := range out {
		out[i] = faketime.NewClock(filepath.Join(dir, "clocks", fmt.Sprintf("client-%d.faketime", i)))
		if err := env.MirrorClientClock(i, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
