package cluster

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/etcd"
)

// TestEtcdMemberReadyOnlyByItsOwnWord: a member whose client port another server holds
// fails to bind and dies; the healthy /health answer of that other server must not pass
// for its readiness (seen once in a matrix under load: the run went on with a dead member).
func TestEtcdMemberReadyOnlyByItsOwnWord(t *testing.T) {
	if _, err := etcd.FindBinary(); err != nil {
		t.Fatalf("etcd: %v (make build)", err)
	}
	impostor, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"health":"true","reason":""}`))
	})}
	go func() { _ = srv.Serve(impostor) }()
	defer srv.Close()

	b, err := NewProcessBackend(ProcessOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	peer, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	m := etcd.Member{Name: "lock-0", ClientPort: impostor.Addr().(*net.TCPAddr).Port, PeerPort: peer, AdvertisePeer: "127.0.0.1:" + strconv.Itoa(peer)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = b.startEtcd(ctx, []etcd.Member{m}, "impostor-test")
	if !errors.Is(err, errPortInUse) {
		t.Fatalf("a member that could not bind its client port, another server healthy on it: %v; want a start that failed for the port", err)
	}
}
