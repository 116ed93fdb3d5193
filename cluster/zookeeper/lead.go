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

// Lead makes members[0], the member of highest id (NewMembers), the leader of the serving
// ensemble of members, unless it leads already. ZooKeeper cannot hand its leadership
// over, but an election among members with equal histories goes to the highest id:
// lock-0 wins the first one unless it started late, and then Lead crashes the leader,
// waits until lock-0 leads the others, and starts the crashed member again.
func Lead[N Crasher](ctx context.Context, members []N) error {
	leader := -1
	for i, m := range members {
		mode, err := Mode(ctx, m.Addr())
		if err != nil {
			return fmt.Errorf("make %s the leader: mode of %s: %w", members[0].Name(), m.Name(), err)
		}
		if mode == Leader {
			leader = i
		}
	}
	switch leader {
	case 0:
		return nil
	case -1:
		return fmt.Errorf("make %s the leader: no member says it leads", members[0].Name())
	}
	old := members[leader]
	if err := old.Kill(ctx); err != nil {
		return fmt.Errorf("make %s the leader: crash %s, which leads: %w", members[0].Name(), old.Name(), err)
	}
	for {
		mode, err := Mode(ctx, members[0].Addr())
		if err == nil && mode == Leader {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("make %s the leader: %w after %s crashed (last: %s %v)", members[0].Name(), ctx.Err(), old.Name(), mode, err)
		case <-time.After(leadPoll):
		}
	}
	if err := old.Restart(ctx); err != nil {
		return fmt.Errorf("make %s the leader: restart %s: %w", members[0].Name(), old.Name(), err)
	}
	return nil
}
