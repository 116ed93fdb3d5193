package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/workload"
)

// removeKeys deletes what a run left on the servers it did not start: every key whose
// name begins with the run's namespace (locks, fence counters, a library's own keys) and
// the store's registers of it. Servers locklab started are discarded whole, so only
// external ones are swept. It reports how many keys went.
func removeKeys(ctx context.Context, cl *cluster.Cluster, namespace string) (int, error) {
	removed := 0
	var errs []error
	for _, n := range cl.Nodes() {
		if !cluster.IsExternal(n) {
			continue
		}
		rdb := redis.NewClient(cluster.AccessOf(n).Apply(&redis.Options{Addr: n.Addr(), DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, DisableIdentity: true}))
		for _, pattern := range []string{namespace + "*", workload.StoreKeyPrefix + namespace + "*"} {
			k, err := unlinkMatching(ctx, rdb, pattern)
			removed += k
			if err != nil {
				errs = append(errs, fmt.Errorf("remove the run's keys %s from %s (%s): %w", pattern, n.Name(), n.Addr(), err))
			}
		}
		_ = rdb.Close()
	}
	return removed, errors.Join(errs...)
}

// unlinkMatching deletes the keys matching pattern, a SCAN page at a time.
func unlinkMatching(ctx context.Context, rdb *redis.Client, pattern string) (int, error) {
	removed := 0
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 500).Result()
		if err != nil {
			return removed, err
		}
		if len(keys) > 0 {
			n, err := rdb.Unlink(ctx, keys...).Result()
			if err != nil {
				return removed, err
			}
			removed += int(n)
		}
		if cursor = next; cursor == 0 {
			return removed, nil
		}
	}
}

// storeAccess is how the workload uses the store at each address it dials: every
// client's link, and the store's own address (the job queue's producer and reaper).
// nil when the store needs a plain connection only.
func storeAccess(cl *cluster.Cluster, eps []cluster.Endpoints) map[string]access.Access {
	a := cluster.AccessOf(cl.Store)
	if a.IsZero() {
		return nil
	}
	m := map[string]access.Access{cl.Store.Addr(): a}
	for _, ep := range eps {
		m[ep.Store] = a
	}
	return m
}
