package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/zookeeper"
)

// TestZooKeeperPortClash: a member whose port another server holds fails to bind, and
// its start fails for the port, which Start retries on fresh ports. On its client port
// the other server answers srvr as a leader would: that must not pass for the member's
// readiness.
func TestZooKeeperPortClash(t *testing.T) {
	t.Parallel()
	for i, port := range []string{"client", "quorum", "election"} {
		t.Run(port, func(t *testing.T) {
			t.Parallel()
			impostor, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer impostor.Close()
			go func() {
				for {
					c, err := impostor.Accept()
					if err != nil {
						return
					}
					_, _ = io.WriteString(c, "Zookeeper version: 3.8.0\nMode: leader\n")
					c.Close()
				}
			}()
			b, err := NewProcessBackend(ProcessOptions{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			picked := 0 // client, quorum, election
			pick := func(next func() (int, error)) func() (int, error) {
				return func() (int, error) {
					picked++
					if picked-1 == i {
						return impostor.Addr().(*net.TCPAddr).Port, nil
					}
					return next()
				}
			}
			members, err := zookeeper.NewMembers(1, pick(FreePort), pick(zookeeper.PeerPort), nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			_, err = b.startZooKeeper(ctx, members)
			if !errors.Is(err, errPortInUse) {
				t.Fatalf("a member that could not bind its %s port: %v; want a start that failed for the port", port, err)
			}
			t.Logf("%s port held: failed after %s", port, time.Since(start).Round(time.Millisecond))
		})
	}
}
