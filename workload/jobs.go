package workload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// What a worker does with a job whose lock was taken.
const (
	OnTakenDrop  = "drop"  // acknowledge it, as the write-up's withLock does: the holder is trusted to finish it
	OnTakenRetry = "retry" // leave it in the processing list: the reaper re-delivers it after the visibility timeout
)

// Jobs describes the job-queue workload: a producer pushes jobs at Rate onto a reliable
// queue in the store's server; Config.Clients workers take them with BLMOVE onto their own
// processing lists, run them (Config.Work, jittered) and append each job's side effect to
// a ledger; a reaper re-delivers a job whose visibility timeout expired before its ack.
// With Lock, each job runs under the lock of its key, and a worker that finds the lock
// taken skips the job (OnTaken says what becomes of it).
type Jobs struct {
	Rate       float64       // jobs per second while the run lasts (0: only Count)
	Count      int           // jobs pushed at once when the run starts
	SameKey    bool          // every job locks one key instead of its own
	Visibility time.Duration // a delivered job not acknowledged within it is re-delivered
	Lock       bool          // run each job under its lock, skipping it when the lock is taken
	OnTaken    string        // drop or retry
	OnError    string        // the same for an acquire that failed with an error (unknown outcome)
	// Idempotent writes an idempotency record atomically with the side effect: a job whose
	// record exists is not run again. The fix that holds where a lock cannot.
	Idempotent bool
	// ReleaseAfterAck holds each job's lock until its acknowledgement (the worker
	// acknowledges, then releases) instead of releasing it right after the side effect.
	ReleaseAfterAck bool
	// Stall, when set, makes a share of the jobs' first runs stall past their visibility
	// timeout, so that the queue re-delivers them while they run.
	Stall *Stall
	// QueueAddr is the queue's server as the reaper and the producer reach it (not through
	// any client's link: faults act on workers, not on the queue's own bookkeeping).
	QueueAddr string
}

// Stall is a stall that outlasts a job's visibility timeout (a GC pause, a slow downstream
// call, a blocked event loop), striking a share of the jobs' first runs at a point of the
// run: the run waits there until the queue has re-delivered its job, and then After more.
// Waiting for the re-delivery, not for a fixed time, makes the stall outlast the
// visibility timeout however late the reaper comes. Only first runs stall, so that each
// stall makes one re-delivery and its copy runs like any job.
type Stall struct {
	Rate float64 // share of first runs that stall, 0 to 1
	// At is where: BeforeWrite (during the job, its lock held) or BeforeAck (after the side
	// effect and, unless ReleaseAfterAck, after the release).
	At    string
	After time.Duration // how long the run stalls on once its job was re-delivered
	// Fail is the share of stalled runs that then fail: at BeforeWrite with no side effect
	// (recorded as an effect that failed, ErrJobFailed), at BeforeAck after it; either way
	// the worker releases its lock, as a handler's exception would, and never acknowledges.
	Fail float64
}

// The errors of a job-queue worker's effect that did not happen: the run failed after its
// stall, or the idempotency record says the job was done already.
var (
	ErrJobFailed   = errors.New("the job failed after its stall, before its side effect")
	ErrAlreadyDone = errors.New("already done: the idempotency record exists")
)

// StallPoints are the points a Stall can strike at.
func StallPoints() []string { return []string{BeforeWrite, BeforeAck} }

// JobsClient is the client number of the producer and the reaper in a history: one past
// the last worker.
func JobsClient(workers int) int { return workers }

func (j *Jobs) validate() error {
	switch {
	case j.Rate < 0 || j.Count < 0 || (j.Rate == 0 && j.Count == 0):
		return fmt.Errorf("jobs: want a rate or a count of jobs, got rate %g and count %d", j.Rate, j.Count)
	case j.Visibility <= 0:
		return fmt.Errorf("jobs: visibility timeout must be positive, got %s", j.Visibility)
	case j.OnTaken != OnTakenDrop && j.OnTaken != OnTakenRetry:
		return fmt.Errorf("jobs: on_taken must be %s or %s, got %q", OnTakenDrop, OnTakenRetry, j.OnTaken)
	case j.OnError != OnTakenDrop && j.OnError != OnTakenRetry:
		return fmt.Errorf("jobs: on_error must be %s or %s, got %q", OnTakenDrop, OnTakenRetry, j.OnError)
	case j.QueueAddr == "":
		return errors.New("jobs: no queue address")
	}
	if st := j.Stall; st != nil {
		switch {
		case st.Rate < 0 || st.Rate > 1 || st.Fail < 0 || st.Fail > 1:
			return fmt.Errorf("jobs: stall rate and fail must be shares from 0 to 1, got %g and %g", st.Rate, st.Fail)
		case st.At != BeforeWrite && st.At != BeforeAck:
			return fmt.Errorf("jobs: a stall strikes at %s or %s, not %q", BeforeWrite, BeforeAck, st.At)
		case st.After < 0:
			return fmt.Errorf("jobs: stall after must not be negative, got %s", st.After)
		}
	}
	return nil
}

// queueKeys are the names of the queue's structures on the store's server, under the
// run's namespace so that a run on external servers removes them when it ends.
type queueKeys struct {
	queue, inflight, effects, fences, done, procPrefix string
}

func newQueueKeys(ns string) queueKeys {
	p := StoreKeyPrefix + ns + "jobs:"
	return queueKeys{queue: p + "queue", inflight: p + "inflight", effects: p + "effects",
		fences: p + "fences", done: p + "done", procPrefix: p + "processing:"}
}

func (k queueKeys) proc(worker int) string { return k.procPrefix + strconv.Itoa(worker) }

// A job travels as "name|lock key", and once re-delivered as "name|lock key|r", so that a
// worker can tell a first run from a re-run. In the in-flight set it is "worker|payload".
func jobPayload(name, lockKey string) string { return name + "|" + lockKey }

func splitPayload(p string) (name, lockKey string, redelivered bool) {
	name, rest, _ := strings.Cut(p, "|")
	lockKey, mark, _ := strings.Cut(rest, "|")
	return name, lockKey, mark == "r"
}

var (
	// KEYS inflight; ARGV member, deadline (ms on the run's clock). The visibility clock
	// starts when the worker has the job; NX keeps the reaper's stamp if it came first.
	stampScript = redis.NewScript(`return redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1])`)
	// KEYS processing list, inflight; ARGV payload, member. 1: acknowledged; 0: the job was
	// no longer the worker's (the reaper had re-delivered it).
	ackScript = redis.NewScript(`
local n = redis.call('LREM', KEYS[1], 1, ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return n`)
	// KEYS effects, fences, done; ARGV job, fence mode, fence, idempotent. The side effect:
	// the job's count in the ledger goes up by one, returned. -1: refused for a stale fence
	// (the job's fences only grow); -2: the idempotency record says it was done already.
	effectScript = redis.NewScript(`
if ARGV[2] ~= 'off' then
  local f = tonumber(ARGV[3])
  local m = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
  if f < m then return -1 end
  if f > m then redis.call('HSET', KEYS[2], ARGV[1], f) end
end
if ARGV[4] == '1' and redis.call('HSETNX', KEYS[3], ARGV[1], 1) == 0 then return -2 end
return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)`)
	// KEYS queue, inflight; ARGV now, deadline for a job found unstamped, processing
	// prefix, workers. Stamps jobs that sit in a processing list without a deadline (the
	// worker stopped between taking and stamping), re-delivers every job past its
	// deadline, and says whether the queue is drained: {drained, member...}.
	reapScript = redis.NewScript(`
local n = tonumber(ARGV[4])
local busy = redis.call('LLEN', KEYS[1])
for w = 0, n - 1 do
  local list = ARGV[3] .. w
  for _, p in ipairs(redis.call('LRANGE', list, 0, -1)) do
    busy = busy + 1
    redis.call('ZADD', KEYS[2], 'NX', ARGV[2], w .. '|' .. p)
  end
end
local out = {0}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, 1000)) do
  redis.call('ZREM', KEYS[2], m)
  local sep = string.find(m, '|', 1, true)
  local w, p = string.sub(m, 1, sep - 1), string.sub(m, sep + 1)
  if redis.call('LREM', ARGV[3] .. w, 1, p) > 0 then
    local again = p
    if string.sub(p, -2) ~= '|r' then again = p .. '|r' end
    redis.call('RPUSH', KEYS[1], again)
    table.insert(out, m)
  end
end
busy = busy + redis.call('ZCARD', KEYS[2])
if busy == 0 then out[1] = 1 end
return out`)
)

// jobQueue is the state the producer, the reaper and the workers share.
type jobQueue struct {
	cfg     *Config
	keys    queueKeys
	rdb     *redis.Client // producer and reaper
	drained chan struct{} // closed once the producer stopped and nothing is left to run
}

func runJobs(ctx context.Context, stop <-chan struct{}, cfg Config) error {
	j := cfg.Jobs
	q := &jobQueue{cfg: &cfg, keys: newQueueKeys(cfg.Namespace), drained: make(chan struct{})}
	q.rdb = redis.NewClient(cfg.options(j.QueueAddr))
	defer q.rdb.Close()

	workers, err := newClients(&cfg, func(c *client) {
		o := cfg.options(cfg.StoreAddr(c.id))
		o.PoolSize = 2
		c.queue = redis.NewClient(o)
	})
	if err != nil {
		return err
	}
	defer closeConns(workers)

	produced := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2 + len(workers))
	go func() {
		defer wg.Done()
		defer close(produced)
		q.produce(ctx, stop)
	}()
	go func() {
		defer wg.Done()
		q.reap(ctx, produced)
	}()
	for _, c := range workers {
		go func() {
			defer wg.Done()
			c.work(ctx, q)
		}()
	}
	wg.Wait()

	errs := []error{closeLockers(workers)}
	if ctx.Err() == nil {
		if err := q.tally(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// produce pushes jobs: Count at once, then one every 1/Rate until stop.
func (q *jobQueue) produce(ctx context.Context, stop <-chan struct{}) {
	s := q.cfg.Rec.Stream(JobsClient(q.cfg.Clients))
	j := q.cfg.Jobs
	n := 0
	push := func() {
		name := "j" + strconv.Itoa(n)
		n++
		lockKey := name
		if j.SameKey {
			lockKey = "same"
		}
		opCtx, cancel := context.WithTimeout(ctx, q.cfg.Timeout)
		call := s.Now()
		err := q.rdb.LPush(opCtx, q.keys.queue, jobPayload(name, lockKey)).Err()
		cancel()
		s.Record(histories.Enqueue, name, histories.Input{}, errOutput(err), outcomeOf(err), call)
	}
	for range j.Count {
		push()
	}
	if j.Rate <= 0 {
		return
	}
	interval := time.Duration(float64(time.Second) / j.Rate)
	next := time.Now()
	for {
		next = next.Add(interval)
		t := time.NewTimer(time.Until(next))
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
		push()
	}
}

// reap re-delivers overdue jobs every tenth of the visibility timeout, and closes drained
// once the producer has stopped and no job is queued, in a processing list or in flight.
func (q *jobQueue) reap(ctx context.Context, produced <-chan struct{}) {
	s := q.cfg.Rec.Stream(JobsClient(q.cfg.Clients))
	vis := q.cfg.Jobs.Visibility
	tick := time.NewTicker(max(vis/10, 5*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		finished := false
		select {
		case <-produced:
			finished = true
		default:
		}
		now := s.Now()
		opCtx, cancel := context.WithTimeout(ctx, q.cfg.Timeout)
		res, err := reapScript.Run(opCtx, q.rdb, []string{q.keys.queue, q.keys.inflight},
			now/1e6, (now+int64(vis))/1e6, q.keys.procPrefix, q.cfg.Clients).Slice()
		cancel()
		if err != nil || len(res) == 0 {
			continue // the queue's own server is never faulted; a slow reply only delays a round
		}
		for _, m := range res[1:] {
			member, _ := m.(string)
			w, payload, _ := strings.Cut(member, "|")
			name, _, _ := splitPayload(payload)
			worker, _ := strconv.Atoi(w)
			s.Record(histories.Redeliver, name, histories.Input{}, histories.Output{Value: int64(worker)}, histories.OK, now)
		}
		if drained, _ := res[0].(int64); drained == 1 && finished {
			close(q.drained)
			return
		}
	}
}

// tally reads the ledger back at the end: one Tally per job that has a side effect, then
// the closing Tally, so that a checker knows the ledger was read to the end.
func (q *jobQueue) tally(ctx context.Context) error {
	s := q.cfg.Rec.Stream(JobsClient(q.cfg.Clients))
	var cursor uint64
	jobs := 0
	for {
		kv, next, err := q.rdb.HScan(ctx, q.keys.effects, cursor, "*", 1000).Result()
		if err != nil {
			return fmt.Errorf("workload: read the ledger: %w", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			n, _ := strconv.ParseInt(kv[i+1], 10, 64)
			now := s.Now()
			s.Record(histories.Tally, kv[i], histories.Input{}, histories.Output{Value: n}, histories.OK, now)
			jobs++
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	now := s.Now()
	s.Record(histories.Tally, histories.TallyEnd, histories.Input{}, histories.Output{Value: int64(jobs)}, histories.OK, now)
	return nil
}

// work is one worker's loop: take a job, run it (under its lock), acknowledge it, until
// the queue is drained or ctx ends.
func (c *client) work(ctx context.Context, q *jobQueue) {
	poll := min(100*time.Millisecond, c.cfg.Timeout/2)
	for {
		select {
		case <-q.drained:
			return
		case <-ctx.Done():
			return
		default:
		}
		// Held here, not once the job is taken: a hold must not eat into its visibility timeout.
		if c.cfg.Jobs.Lock && c.hook(ctx, "", BeforeAcquire) {
			c.die()
			return
		}
		call := c.rec.Now()
		payload, err := c.queue.BLMove(ctx, q.keys.queue, q.keys.proc(c.id), "RIGHT", "LEFT", poll).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			// The job, if one moved, is in this worker's processing list: the reaper stamps
			// and re-delivers it. Nothing is known about which job it was.
			c.sleep(ctx, c.jitter(c.cfg.Retry))
			continue
		}
		name, lockKey, redelivered := splitPayload(payload)
		c.rec.Record(histories.Deliver, name, histories.Input{}, histories.Output{}, histories.OK, call)
		member := strconv.Itoa(c.id) + "|" + payload
		opCtx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		_ = stampScript.Run(opCtx, c.queue, []string{q.keys.inflight}, member, (c.rec.Now()+int64(q.cfg.Jobs.Visibility))/1e6).Err()
		cancel()
		if crashed := c.runJob(ctx, q, job{name, lockKey, payload, member, redelivered}); crashed {
			c.die()
			return
		}
	}
}

// job is one delivery of a job, as a worker took it off the queue.
type job struct {
	name, lockKey, payload, member string
	redelivered                    bool // not the job's first run
}

// runJob runs one delivered job and acknowledges it; it reports a crash.
func (c *client) runJob(ctx context.Context, q *jobQueue, jb job) (crashed bool) {
	j := c.cfg.Jobs
	name, lockKey := jb.name, jb.lockKey
	var lease lockimpl.Lease
	if j.Lock {
		var outcome histories.Outcome
		lease, outcome, crashed = c.acquire(ctx, lockKey)
		if crashed {
			return true
		}
		if outcome != histories.OK {
			// Taken or unknown: skip, as withLock does; OnError says what becomes of a job
			// whose acquire failed with an error, for workers that tell it from a taken lock.
			now := c.rec.Now()
			c.rec.Record(histories.Skip, name, histories.Input{}, histories.Output{Error: "lock " + lockKey + " " + string(outcome)}, histories.OK, now)
			policy := j.OnTaken
			if outcome == histories.Unknown {
				policy = j.OnError
			}
			if policy == OnTakenDrop {
				c.ack(ctx, q, jb)
			}
			return false
		}
	}
	// Both drawn for every first run that gets this far, so that a worker's later draws do
	// not depend on which of its runs stalled.
	stallAt, fails := "", false
	if st := j.Stall; st != nil && !jb.redelivered {
		stall, fail := c.rng.Float64() < st.Rate, c.rng.Float64() < st.Fail
		if stall {
			stallAt, fails = st.At, fail
		}
	}
	// Hooks name the lock key: a crash there ends the belief in that lock.
	if c.hook(ctx, lockKey, AfterAcquire) {
		return true
	}
	c.sleep(ctx, c.jitter(c.cfg.Work))
	if stallAt == BeforeWrite {
		c.stallPastVisibility(ctx, q, jb)
		if fails {
			now := c.rec.Now()
			c.rec.Record(histories.Effect, name, histories.Input{}, histories.Output{Error: ErrJobFailed.Error()}, histories.Fail, now)
			return j.Lock && c.release(ctx, lease)
		}
	}
	if c.hook(ctx, lockKey, BeforeWrite) {
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	fence := int64(0)
	if j.Lock {
		fence = c.fence(lease)
	}
	opCtx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	call := c.rec.Now()
	n, err := effectScript.Run(opCtx, c.queue, []string{q.keys.effects, q.keys.fences, q.keys.done},
		name, string(c.cfg.Fencing), fence, boolArg(j.Idempotent)).Int64()
	cancel()
	out, outcome := errOutput(err), outcomeOf(err)
	switch {
	case err != nil:
	case n == -1:
		out.Error, outcome = ErrRejected.Error(), histories.Fail
	case n == -2:
		out.Error, outcome = ErrAlreadyDone.Error(), histories.Fail
	default:
		out.Value = n
	}
	c.rec.Record(histories.Effect, name, histories.Input{Fence: fence}, out, outcome, call)
	holding := j.Lock
	if holding && !j.ReleaseAfterAck {
		if crashed := c.release(ctx, lease); crashed {
			return true
		}
		holding = false
	}
	if stallAt == BeforeAck {
		c.stallPastVisibility(ctx, q, jb)
		if fails { // after its side effect, before its ack: the job is never acknowledged
			return holding && c.release(ctx, lease)
		}
	}
	if c.hook(ctx, lockKey, BeforeAck) {
		return true
	}
	c.ack(ctx, q, jb)
	return holding && c.release(ctx, lease)
}

// stallPastVisibility is a stall of the run of jb (Jobs.Stall): it lasts until the queue
// has re-delivered the job (it left this worker's processing list), then Stall.After more.
// The checks go over the worker's own link to the queue and are not recorded.
func (c *client) stallPastVisibility(ctx context.Context, q *jobQueue, jb job) {
	list := q.keys.proc(c.id)
	poll := max(c.cfg.Jobs.Visibility/20, 5*time.Millisecond)
	for ctx.Err() == nil {
		opCtx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		_, err := c.queue.LPos(opCtx, list, jb.payload, redis.LPosArgs{}).Result()
		cancel()
		if errors.Is(err, redis.Nil) {
			break // re-delivered: no longer in this worker's list
		}
		c.sleep(ctx, poll)
	}
	c.sleep(ctx, c.cfg.Jobs.Stall.After)
}

// ack removes the job from the worker's processing list. Fail: it was no longer there,
// because the reaper had re-delivered it.
func (c *client) ack(ctx context.Context, q *jobQueue, jb job) {
	if ctx.Err() != nil {
		return
	}
	opCtx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	call := c.rec.Now()
	n, err := ackScript.Run(opCtx, c.queue, []string{q.keys.proc(c.id), q.keys.inflight}, jb.payload, jb.member).Int64()
	cancel()
	out, outcome := errOutput(err), outcomeOf(err)
	if err == nil && n == 0 {
		out.Error, outcome = "no longer in the processing list: re-delivered", histories.Fail
	}
	c.rec.Record(histories.Ack, jb.name, histories.Input{}, out, outcome, call)
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func errOutput(err error) histories.Output {
	if err != nil {
		return histories.Output{Error: err.Error()}
	}
	return histories.Output{}
}

// outcomeOf classifies a queue command's error: any error may have come after the
// command ran.
func outcomeOf(err error) histories.Outcome {
	if err == nil {
		return histories.OK
	}
	return histories.Unknown
}
