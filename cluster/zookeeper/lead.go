package zookeeper

import (
	"context"
	"fmt"
	"time"
)

// Crasher is a member the harness can crash and start again (a cluster.Node).
type Crasher interface {
	Name() string
	Addr() string
	Kill(ctx context.Context) error
	Restart(ctx context.Context) error
}

// leadPoll is how often Lead asks whether the election it caused is over.
const leadPoll = 20 * time.Millisecond

// LeadTimeout bounds Lead when its caller does not: each round is an election (a second
// or two) and a JVM's start (a second and a half on an idle machine, 8 s measured with a
// load average of 14 on 2 cores), and a loaded machine may need several rounds (a
// minute ran out in CI with two CPU-bound processes and four JVM ensembles beside it).
// It is a bound against a hang, not an expectation: Lead returns as soon as lock-0 leads.
const LeadTimeout = 3 * time.Minute

// Lead makes members[0], the member of highest id (NewMembers), the leader of the serving
// ensemble of members, unless it leads already. ZooKeeper cannot hand its leadership
// over, but an election among members with equal histories goes to the highest id:
// lock-0 wins the first one unless it started late, and then Lead crashes the leader,
// waits until another member leads the others, and starts the crashed member again. A
// member that lags behind (on a loaded machine, one whose log is shorter) can lose that
// election too: Lead then crashes the new leader in turn, until lock-0 leads or ctx ends.
func Lead[N Crasher](ctx context.Context, members []N) error {
	for round := 1; ; round++ {
		leader, err := leading(ctx, members, -1)
		if err != nil {
			return fmt.Errorf("make %s the leader: %w", members[0].Name(), err)
		}
		if leader == 0 {
			return nil
		}
		old := members[leader]
		if err := old.Kill(ctx); err != nil {
			return fmt.Errorf("make %s the leader: crash %s, which leads: %w", members[0].Name(), old.Name(), err)
		}
		if _, err := leading(ctx, members, leader); err != nil {
			return fmt.Errorf("make %s the leader (round %d): after %s crashed: %w", members[0].Name(), round, old.Name(), err)
		}
		if err := old.Restart(ctx); err != nil {
			return fmt.Errorf("make %s the leader: restart %s: %w", members[0].Name(), old.Name(), err)
		}
	}
}

// leading waits until a member other than down says it leads, and says which; the
// error says what the members last said when ctx ends first.
func leading[N Crasher](ctx context.Context, members []N, down int) (int, error) {
	var last []string
	for {
		last = last[:0]
		for i, m := range members {
			if i == down {
				continue
			}
			mode, err := Mode(ctx, m.Addr())
			if err == nil && mode == Leader {
				return i, nil
			}
			last = append(last, fmt.Sprintf("%s: %s %v", m.Name(), mode, err))
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no member leads: %w (last: %v)", ctx.Err(), last)
		case <-time.After(leadPoll):
		}
	}
}
