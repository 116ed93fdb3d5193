package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/faults/spec"
)

// Schedule runs the faults of a plan: each at its time, or when its trigger fires, and
// heals it after its duration. Stop heals every fault, whatever happened.
type Schedule struct {
	env    *Env
	items  []*item
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	errs []error
}

type item struct {
	spec     Spec
	kind     KindInfo
	mu       sync.Mutex // guards fault, which a recurring fault (Spec.Every) replaces at each strike
	fault    Fault
	fired    chan struct{} // closed when the trigger fires (nil: timed fault)
	injected chan struct{} // closed once Inject has returned (or will never run)
	window   int           // the recorder's window index, -1 when none
	until    *Trigger      // heals it when that client reaches that point (nil: its duration)
	held     atomic.Int64  // ns its trigger held its client until it was in place (minus the start while held)
}

// Start checks every fault's availability in env, then runs the schedule in the
// background. Times are relative to now. Each Planned runs in one schedule only.
func Start(ctx context.Context, env *Env, planned []*Planned) (*Schedule, error) {
	items := make([]*item, len(planned))
	for i, pl := range planned {
		s := pl.Spec
		if !pl.used.CompareAndSwap(false, true) {
			return nil, fmt.Errorf("fault %s: already ran in another run (prepare it again)", s)
		}
		if err := pl.fault.Available(env); err != nil {
			return nil, fmt.Errorf("fault %s: %w", s, err)
		}
		items[i] = &item{spec: s, kind: pl.kind, fault: pl.fault, injected: make(chan struct{}), window: -1}
		if pl.Until != nil && pl.kind.healsAtUntil {
			if env.Gates == nil || pl.Until.Client >= env.Clients {
				return nil, fmt.Errorf("fault %s: until needs client gates and a client of the run's %d", s, env.Clients)
			}
			items[i].until = pl.Until
		}
		if tr := pl.Trigger; tr != nil {
			if tr.Client >= env.Clients {
				return nil, fmt.Errorf("fault %s: client %d of a run of %d clients", s, tr.Client, env.Clients)
			}
			if env.Gates == nil {
				return nil, fmt.Errorf("fault %s: a trigger needs client gates", s)
			}
			it := items[i]
			it.fired = make(chan struct{})
			env.Gates.Arm(tr.gate(func(ctx context.Context) {
				close(it.fired)
				if it.spec.At == 0 {
					// Hold the client at its point until the fault is in place.
					it.held.Add(-time.Now().UnixNano()) // a hold under way counts until now (Held)
					select {
					case <-it.injected:
					case <-ctx.Done():
					}
					it.held.Add(time.Now().UnixNano())
				}
			}))
		}
	}
	for i, pl := range planned {
		if h, ok := items[i].fault.(startHolder); ok && pl.Trigger == nil && pl.Spec.At == 0 {
			h.holdFromStart(env)
		}
	}
	return start(ctx, env, items), nil
}

// start runs built items in the background.
func start(ctx context.Context, env *Env, items []*item) *Schedule {
	ctx, cancel := context.WithCancel(ctx)
	sch := &Schedule{env: env, items: items, cancel: cancel}
	for _, it := range items {
		sch.wg.Add(1)
		go func() {
			defer sch.wg.Done()
			sch.run(ctx, it)
		}()
	}
	return sch
}

// run waits for the item's time (or trigger), injects it, waits its duration and heals
// it; a recurring fault (Spec.Every) strikes again, a fault built afresh each time.
func (sch *Schedule) run(ctx context.Context, it *item) {
	defer func() {
		select {
		case <-it.injected:
		default:
			close(it.injected) // never injected: release a held client
		}
	}()
	if it.fired != nil {
		select {
		case <-it.fired:
		case <-ctx.Done():
			return
		}
	}
	if it.spec.At > 0 && !sch.sleepPlan(ctx, it.spec.At, sch.Held()) { // at 0 its trigger holds its client
		return
	}
	for strike := 1; ; strike++ {
		struck := time.Now()
		if err := it.current().Inject(ctx, sch.env); err != nil && ctx.Err() == nil {
			// An injection cut short by Stop is no error: Stop heals whatever it did.
			sch.fail(fmt.Errorf("inject %s: %w", it.spec, err))
		}
		if !it.kind.ownWindow && sch.env.Rec != nil {
			it.window = sch.env.Rec.FaultStart(it.spec.Kind, it.spec.Target, it.spec.String())
			spec.WithOffset(sch.env.Rec, it.window, it.spec)
		}
		if strike == 1 {
			close(it.injected)
		}
		if !sch.sleepPlanUntil(ctx, it.spec.Duration, sch.Held(), sch.armUntil(it)) {
			return // Stop heals it
		}
		sch.heal(ctx, it)
		if it.spec.Every <= 0 {
			return
		}
		// The next strike is a fault built afresh: a fault keeps state while it runs.
		f, err := it.kind.build(it.spec)
		if err != nil {
			sch.fail(fmt.Errorf("strike %d of %s: %w", strike+1, it.spec, err))
			return
		}
		it.mu.Lock()
		it.fault = f
		it.mu.Unlock()
		if !sch.sleepPlan(ctx, it.spec.Every-time.Since(struck), sch.Held()) {
			return
		}
	}
}

// current is the item's fault: its latest strike's, for a recurring one.
func (it *item) current() Fault {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.fault
}

// armUntil is closed when it's until client reaches its point from now on, once the fault
// is in place (nil when it has no until): the fault lasts until then, its duration
// bounding it.
func (sch *Schedule) armUntil(it *item) <-chan struct{} {
	if it.until == nil {
		return nil
	}
	ch, once := make(chan struct{}), sync.Once{}
	sch.env.Gates.Arm(it.until.gate(func(context.Context) { once.Do(func() { close(ch) }) }))
	return ch
}

// heal heals it. A heal cut short by Stop's cancellation is no error: Stop heals every
// fault again with a context of its own, and its error counts.
func (sch *Schedule) heal(ctx context.Context, it *item) {
	if err := it.current().Heal(ctx, sch.env); err != nil && ctx.Err() == nil {
		sch.fail(fmt.Errorf("heal %s: %w", it.spec, err))
	}
	if it.window >= 0 && sch.env.Rec != nil {
		sch.env.Rec.FaultEnd(it.window)
	}
}

func (sch *Schedule) fail(err error) {
	sch.mu.Lock()
	sch.errs = append(sch.errs, err)
	sch.mu.Unlock()
}

// AwaitSettled returns once no fault holds a client in a strike under way (or ctx ends),
// and as long after as triggers held clients until their faults were in place: the
// plan's duration is time the clients run, and a kill and restart that take a container
// engine seconds must not end the run before the story it starts (the lock taken again).
func (sch *Schedule) AwaitSettled(ctx context.Context) {
	sch.sleepPlan(ctx, 0, 0)
	for _, it := range sch.items {
		s, ok := it.current().(settler)
		if !ok {
			continue
		}
		if ch := s.unsettled(); ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}
}

// sleepPlan waits d on the plan's clock, which leaves out the time triggers held clients
// beyond held0 (Held): every fault keeps its place in the story, a link cut at a trigger
// healed with a partition whose trigger held its client until the election came.
func (sch *Schedule) sleepPlan(ctx context.Context, d, held0 time.Duration) bool {
	return sch.sleepPlanUntil(ctx, d, held0, nil)
}

// sleepPlanUntil is sleepPlan cut short when until is closed (never, when it is nil).
func (sch *Schedule) sleepPlanUntil(ctx context.Context, d, held0 time.Duration, until <-chan struct{}) bool {
	start := time.Now()
	for {
		left := d - time.Since(start) + sch.Held() - held0
		if left <= 0 {
			return ctx.Err() == nil
		}
		t := time.NewTimer(max(left, holdPoll)) // a hold under way keeps left from shrinking
		select {
		case <-t.C:
		case <-until:
			t.Stop()
			return ctx.Err() == nil
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// holdPoll is sleepPlan's shortest wait.
const holdPoll = 10 * time.Millisecond

// Held is how long triggers have held their clients until their faults were in place:
// the run's end and its hard deadline move on by as much (see AwaitSettled).
func (sch *Schedule) Held() time.Duration {
	var held time.Duration
	for _, it := range sch.items {
		if h := it.held.Load(); h < 0 {
			held += time.Duration(h + time.Now().UnixNano())
		} else {
			held += time.Duration(h)
		}
	}
	return held
}

// Stop ends the schedule and heals every fault, injected or not (Heal is idempotent),
// with a fresh context so that healing happens even when the run's context is gone.
// It returns every injection and healing error.
func (sch *Schedule) Stop() error {
	sch.cancel()
	sch.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, it := range sch.items {
		sch.heal(ctx, it)
	}
	sch.mu.Lock()
	defer sch.mu.Unlock()
	return errors.Join(sch.errs...)
}

// ParseTrigger reads "client:N@point" or "any@point" (client -1), each optionally
// followed by "#K": the K-th time the client (any client: the K-th arrival of any)
// reaches the point, so that a fault can strike a later round of a client's steps (its
// second acquire, once its connections exist). With clients ≥ 0 the client number is
// checked against it.
func ParseTrigger(s string, clients int) (Trigger, error) {
	who, point, ok := strings.Cut(s, "@")
	if !ok || point == "" {
		return Trigger{}, fmt.Errorf("trigger %q: want client:N@point or any@point", s)
	}
	tr := Trigger{Client: -1, Point: point, Nth: 1}
	if p, k, ok := strings.Cut(point, "#"); ok {
		nth, err := strconv.Atoi(k)
		if err != nil || nth < 1 || p == "" {
			return Trigger{}, fmt.Errorf("trigger %q: want point#K with K ≥ 1 (the K-th arrival), got %q", s, point)
		}
		tr.Point, tr.Nth = p, nth
	}
	if who == "any" {
		return tr, nil
	}
	n, ok := strings.CutPrefix(who, "client:")
	client, err := strconv.Atoi(n)
	if !ok || err != nil || client < 0 || (clients >= 0 && client >= clients) {
		return Trigger{}, fmt.Errorf("trigger %q: want client:N@point with 0 ≤ N < %d, or any@point", s, clients)
	}
	tr.Client = client
	return tr, nil
}

func kindNamed(name string) (KindInfo, bool) {
	for _, k := range Kinds() {
		if k.Name == name {
			return k, true
		}
	}
	return KindInfo{}, false
}
