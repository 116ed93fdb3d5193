package bridge

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// failoverEvents are the events of Failover.tla.
var failoverEvents = []string{"init", "acquire", "wait-acked", "wait-failed", "release", "replicate", "crash-primary", "promote-replica"}

// translateFailover turns a Failover counterexample into the catalog's failover-loss
// plan, fitted to the trace: the client that acquires first is the one at whose grant
// the primary dies (the failover fault cuts replication to every replica before, at an
// instant without a lease), the topology has the trace's replicas, WAIT what the config
// waits for, and the run must break the same property once another client is granted by
// the promoted replica. A trace whose promoted replica lacks the holder's grant while
// another replica had it (acknowledged by WAIT, or replicated) becomes a failover that
// cuts one replica alone (cut one): the others keep replicating, are barred from
// promotion and acknowledge the WAIT, and the lagging one is promoted, as in the trace;
// the primary then dies at the holder's grant, after its WAIT.
func translateFailover(cx *Counterexample) (*Translation, error) {
	tr, cfg := cx.Trace, cx.Config
	prop, clients, unmappable, err := begin(cx)
	if err != nil {
		return nil, err
	}
	replicas, err := cfg.Set("Replicas")
	if err != nil {
		return nil, err
	}
	waitFor, err := cfg.Int("WaitFor")
	if err != nil {
		return nil, err
	}
	holder, successor := -1, -1
	had := map[string]bool{} // replicas that got the holder's grant (replicated or acknowledged)
	promoted, lagging := false, false
	for i, st := range tr.States {
		ev := st.Event
		if !slices.Contains(failoverEvents, ev.Name) || (i == 0) != (ev.Name == "init") {
			return nil, unmappable(ev, "not an event of Failover.tla where it stands")
		}
		client := -1
		if ev.Name == "acquire" || ev.Name == "wait-acked" {
			if len(ev.Args) < 1 || slices.Index(clients, ev.Args[0]) < 0 {
				return nil, unmappable(ev, "%q is not one of the clients %v", strings.Join(ev.Args, ", "), clients)
			}
			client = slices.Index(clients, ev.Args[0])
		}
		switch {
		case ev.Name == "acquire" && holder < 0:
			holder = client
		case ev.Name == "acquire" && promoted && client != holder && successor < 0:
			successor = client
		case ev.Name == "replicate" && holder >= 0 && !promoted && len(ev.Args) == 2 && strings.Contains(ev.Args[1], "owner |-> "+clients[holder]):
			had[ev.Args[0]] = true
		case ev.Name == "wait-acked" && client == holder && len(ev.Args) == 3:
			for _, r := range replicas {
				if strings.Contains(ev.Args[2], r) {
					had[r] = true
				}
			}
		case ev.Name == "promote-replica":
			if holder < 0 {
				return nil, unmappable(ev, "a promotion before any grant: nothing is lost")
			}
			if len(ev.Args) == 0 {
				return nil, unmappable(ev, "no replica named")
			}
			if r := ev.Args[0]; had[r] {
				return nil, unmappable(ev, "%s had %s's grant: the promotion loses nothing", r, clients[holder])
			}
			promoted, lagging = true, len(had) > 0
		}
	}
	if successor < 0 {
		return nil, fmt.Errorf("%s: no other client acquires after the promotion: no second holder to replay", tr.File)
	}
	p, err := plan.Scenario("failover-loss", locks.All())
	if err != nil {
		return nil, err
	}
	p.Name = tr.Config
	p.Topology = "replicated:" + strconv.Itoa(1+len(replicas))
	p.Clients = len(clients)
	p.Faults[0].Target = fmt.Sprintf("client:%d", holder)
	if waitFor > 0 {
		p.WaitReplicas, p.WaitTimeout, p.Timeout = waitFor, plan.D(p.Timeout.D()), plan.D(2*p.Timeout.D())
		p.Faults[0].Point = lockimpl.StepWaiting
	}
	cut := "whose replication was cut"
	if lagging {
		// The replicas that had the grant keep replicating (and acknowledge the WAIT); the
		// primary dies once the holder believes, after its WAIT.
		p.Faults[0].Cut, p.Faults[0].Point = "one", lockimpl.StepGranted
		cut = fmt.Sprintf("with one replica cut off alone while %s, barred from promotion, had the grant", strings.Join(slices.Sorted(maps.Keys(had)), ", "))
	}
	p.Description = fmt.Sprintf("Replays the TLC counterexample %s (%s violated): client %d (%s) is granted the lock on a primary %s, "+
		"the primary dies at that grant, a replica without it is promoted and client %d (%s) is granted the lock again.",
		tr.Config, tr.Invariant, holder, clients[holder], cut, successor, clients[successor])
	if err := p.Validate(locks.All()); err != nil {
		return nil, fmt.Errorf("%s: translated plan: %w", tr.File, err)
	}
	return &Translation{Plan: p, Breaks: prop, Holder: holder, Successor: successor}, nil
}
