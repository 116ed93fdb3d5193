package assess

import (
	"fmt"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"
)

// advise is what to do about a violation of prop by a lock of family f on plan p, in
// one line: the fix that the models and the reference locks show works.
func advise(prop lin.Property, f Family, p plan.Plan) string {
	kinds := map[string]bool{}
	for _, fs := range p.Faults {
		kinds[fs.Kind] = true
	}
	pause := kinds["client-pause"] || kinds["client-clock"] || kinds["server-clock"] || kinds["reply-delay"] || kinds["server-pause"]
	longWork := p.Work.D() >= p.TTL.D()/2
	lostCounter := kinds["server-crash"] || kinds["failover"] || kinds["partition"]
	switch prop {
	case lin.P1:
		switch {
		case longWork:
			return fmt.Sprintf("The critical section (%s) takes more than half the TTL (%s): set the TTL well above the P99 of your critical section, or renew the lease while you work (watchdog), and fence the resource for the pauses no TTL covers.", p.Work.D(), p.TTL.D())
		case p.Careless:
			return "Check the lease's remaining validity right before touching the resource, and stop when it is too short; the check shrinks the window but cannot close it: fence the resource (P2)."
		case f.Kind == KindRedlock && (kinds["server-crash"] || kinds["server-clock"]):
			return "Redlock's majority forgets a grant when a node restarts without fsync or its clock jumps: run the nodes with appendfsync always and delay a restarted node's return by the TTL, or use a consensus store (etcd) with fencing."
		case kinds["server-clock"]:
			return "The lock server's clock jumped and ended the lease early (Redis times a key's expiry on its wall clock): keep the servers' clocks from stepping (slew them), and fence the resource, as no lease survives a jump."
		case kinds["client-clock"] && !kinds["client-pause"]:
			return "The holder's clock ran slow, so it believed its lease valid after it ended: time leases on a monotonic clock, and fence the resource."
		case pause:
			return "No lease survives a pause past its TTL: two clients will believe they hold the lock. Make the resource safe anyway: a lock that grants fencing tokens (fenced, etcd) and a store that refuses an older token (fencing full)."
		case lostCounter:
			return "A failover or restart lost the lock: use appendfsync always and no asynchronous failover for the lock's key, or a consensus store (etcd), and fence the resource."
		}
		return "Two clients believed they held the lock at once: compare with the reference's run of the same plan and fence the resource (fencing full)."
	case lin.P2:
		switch {
		case !f.Fences:
			return "Only fencing protects the resource from a holder whose lease ran out: use a lock that grants fencing tokens (fenced, etcd's revision) and a store that refuses a read or write with an older token (fencing full)."
		case p.Fencing != string(workload.FencingFull):
			return fmt.Sprintf("The lock grants fencing tokens but the store checks them %s: make the store compare the token on every read and write (fencing full), keeping the largest it has seen.", fencingWords(p.Fencing))
		case lostCounter:
			return "The fencing token went backwards (see P3): the store accepted a stale holder's write. Keep the fence counter where it survives crashes and failovers (appendfsync always, or etcd's revision)."
		}
		return "The store accepted a stale holder's access although fencing is full: check that it compares the token on every read and write, atomically with the access."
	case lin.P3:
		if lostCounter {
			return "Fences must come from a counter that never goes backwards: appendfsync always on the lock server and no failover to an asynchronous replica, or a consensus store (etcd's create revision)."
		}
		return "Fences must grow with every grant: take them from one atomic counter incremented in the same step as the grant."
	case lin.L1:
		switch {
		case kinds["client-crash"]:
			return "A crashed holder's lease must end by its TTL: grant every lease with its expiry in the same command (SET NX PX), and stop a renewal when its client dies."
		case pause:
			return "The lock stayed taken long after every lease should have ended: make sure no lease is renewed by a client that is not running its critical section."
		}
		return "A free lock was refused or a lease outlived its TTL: every grant needs an expiry, and a refused acquire must be retried only after the holder's lease can have ended."
	case lin.P6:
		if kinds["partition"] || kinds["failover"] {
			return "Two servers answered for the same lock: a cut-off or demoted primary still took the holder's extend or release while the promoted one had granted the lock to another. Only a lock service that cannot answer from a minority (a consensus store such as etcd) keeps its answers consistent; fence the resource meanwhile."
		}
		return "The lock answered ok to an extend or release after another client had been granted it, so its holder cannot learn that its lease was lost: extend and release only if the key still holds the caller's token, in one atomic step on the server (a Lua script comparing the value before PEXPIRE or DEL; in etcd, a delete guarded by the key's create revision), report a lost lease as such, and end the critical section when an extend is refused."
	case lin.P4:
		return "A lock does not make a job run once: write an idempotency record (the job's id) atomically with the side effect and skip a job already recorded, or hold the lock until the queue has the acknowledgement."
	case lin.P5:
		return "A run that skipped a job because its lock was taken, or failed after taking it, lost the job: leave a skipped job to be re-delivered (do not acknowledge it) and acknowledge only after the side effect."
	}
	return ""
}

func fencingWords(mode string) string {
	switch mode {
	case string(workload.FencingOff):
		return "nowhere (fencing off)"
	case string(workload.FencingWrites):
		return "only on writes (fencing writes: a stale holder still reads)"
	}
	return "in mode " + mode
}

// conformAdvice is what to do about a failed conformance check.
func conformAdvice(check string) string {
	advice := map[string]string{
		"exclusion":                          "Take the lock in one atomic command that fails when the key exists (SET key token NX PX ttl), and report a lock already taken as a refusal, not as an error.",
		"release-and-extend-check-ownership": "Release and extend only if the key still holds your token, in one atomic step on the server (a Lua script comparing the value before DEL or PEXPIRE).",
		"lease-expires":                      "Give every lease its expiry in the same command that grants it, and stop renewing when the client that holds it goes away.",
		"unknown-outcome":                    "Report a command that got no answer as unknown (an error other than 'not acquired'): it may have been applied, and its lease must still expire by its TTL.",
	}
	return advice[check]
}
