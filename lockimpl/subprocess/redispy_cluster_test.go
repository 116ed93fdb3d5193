package subprocess_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/lockimpl"
)

// redis-py on a Redis Cluster (cluster:3x1): redis-py 4.3.4's RedisCluster, seeded with
// the client's links, dialling the link of each node the cluster announces and sending
// each command at most once (clients/python/redis_py_lock.py, connect_cluster).

// redisPyCluster is redis-py as the cluster experiments of cluster_test.go take it.
var redisPyCluster = nodeLib{name: "redis-py", nodes: 1}

func TestRedisPyClusterRegistryEntry(t *testing.T) {
	i := get(t, "redis-py")
	if !i.Cluster || !i.RunsOn(cluster.RedisCluster) || !i.RunsOn(cluster.Single) || !i.RunsOn(cluster.Replicated) || i.Fencing {
		t.Errorf("redis-py = %+v; want a single-instance lock without fences that also runs on %s and %s", i, cluster.Replicated, cluster.RedisCluster)
	}
}

// TestRedisPyOnRedisCluster: keys of every primary are exclusive, extended, released and
// taken again; then the primary of a key is killed and its replica promoted (TAKEOVER),
// and the same client process is granted the key by the promoted node.
func TestRedisPyOnRedisCluster(t *testing.T) {
	locksOnRedisCluster(t, redisPyCluster)
}

// TestRedisPyOnRedisClusterSendsOnce: a SET NX whose reply is lost with its connection is
// not sent again (RedisCluster, by default, sends it again to the same node 0.25 s later:
// see TestRedisPyClusterDefaultsSendTwice). The primary executes one SET, and the acquire
// is unknown, never fail; the same process then finds the lock its lost SET took.
func TestRedisPyOnRedisClusterSendsOnce(t *testing.T) {
	sendsOnceOnRedisCluster(t, redisPyCluster)
}

// TestRedisPyOnRedisClusterRefusesUnmappedNodes: a client whose LOCKLAB_VIA lacks the
// address a primary announces does not start (it says which node), rather than dial the
// announced address around its link.
func TestRedisPyOnRedisClusterRefusesUnmappedNodes(t *testing.T) {
	c := startRedisCluster(t)
	ep, err := c.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := c.SlotPrimary(clustertest.Context(t), "{unmapped}")
	if err != nil {
		t.Fatal(err)
	}
	dropped := cluster.PeerAddr(p)
	via := map[string]string{}
	for from, to := range ep.Via {
		if from != dropped {
			via[from] = to
		}
	}
	if len(via) != len(ep.Via)-1 {
		t.Fatalf("%s (%s) is not among the announced addresses %v", dropped, p.Name(), ep.Via)
	}
	err = newErr(t, get(t, "redis-py"), lockimpl.Config{Addrs: ep.Lock, Via: via, Cluster: true, Timeout: time.Second})
	if !strings.Contains(err.Error(), dropped) || !strings.Contains(err.Error(), "LOCKLAB_VIA does not map") {
		t.Errorf("redis-py with %s missing from LOCKLAB_VIA: %v; want a refusal naming it", dropped, err)
	}
}

// TestRedisPyClusterDefaultsSendTwice is the experiment of
// TestRedisPyOnRedisClusterSendsOnce with redis-py 4.3.4's RedisCluster on its defaults
// (only the connections sent to the client's links, as the client does): the SET is sent
// again after its connection closed, and answers nil for the lock it took itself. It
// shows the experiment sees a resend when there is one.
func TestRedisPyClusterDefaultsSendTwice(t *testing.T) {
	lab := newOnceLab(t, "{once}")
	ctx := clustertest.Context(t)
	ep, err := lab.c.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	var seeds, via []string
	for _, a := range ep.Lock {
		seeds = append(seeds, fmt.Sprintf("%q", a))
	}
	for from, to := range ep.Via {
		via = append(via, fmt.Sprintf("%q: %q", from, to))
	}
	// On stdin "go": SET key 1 NX; on stdout "ready" once connected, then the reply.
	script := `import sys
import redis
from redis.cluster import ClusterNode, RedisCluster

def addr(s):
    host, _, port = s.rpartition(":")
    return host, int(port)

seeds = [addr(s) for s in [` + strings.Join(seeds, ",") + `]]
via = {k: addr(v) for k, v in {` + strings.Join(via, ",") + `}.items()}

class Via(redis.connection.Connection):
    def __init__(self, host, port, **kw):
        host, port = via.get(f"{host}:{port}", (host, port))
        super().__init__(host=host, port=port, **kw)

c = RedisCluster(url="redis://%s:%d" % seeds[0], startup_nodes=[ClusterNode(*s) for s in seeds[1:]], connection_class=Via)
c.get(sys.argv[1])
print("ready", flush=True)
for line in sys.stdin:
    try:
        print(repr(c.set(sys.argv[1], "1", nx=True)), flush=True)
    except Exception as e:
        print("error: %s" % e, flush=True)
`
	sendsTwiceOnDefaults(t, lab, exec.CommandContext(ctx, "/usr/bin/python3", "-c", script, lab.key), "redis-py", "None")
}
