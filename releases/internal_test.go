package releases

import "testing"

func TestCompilerAndNPMOutput(t *testing.T) {
	out := []byte("# github.com/locklab/locklab/lockimpl/libs\nlockimpl/libs/redsync.go:42:10: undefined: redsync.WithShufflePools\nlockimpl/libs/redsync.go:50:2: too many errors\n")
	if got := adapterOf(out); got != "locklab's adapter lockimpl/libs/redsync.go" {
		t.Errorf("adapterOf = %q", got)
	}
	if got := adapterOf([]byte("go: something else\n")); got != "locklab's locklab-lockserve" {
		t.Errorf("adapterOf without a file = %q", got)
	}
	if got := firstLines(out, 2, nil); got != "# github.com/locklab/locklab/lockimpl/libs\nlockimpl/libs/redsync.go:42:10: undefined: redsync.WithShufflePools\n…" {
		t.Errorf("firstLines = %q", got)
	}
	npm := []byte("npm error code ERESOLVE\nnpm error Could not resolve dependency:\nnpm error peerOptional ioredis@\"^4.1.0 || ^5\" from redis-semaphore@5.6.0\n")
	if got := peerConflict(npm); got != `peerOptional ioredis@"^4.1.0 || ^5" from redis-semaphore@5.6.0` {
		t.Errorf("peerConflict = %q", got)
	}
	if got := peerConflict([]byte("npm error code E404\n")); got != "" {
		t.Errorf("peerConflict of a 404 = %q", got)
	}
	if dirName("@sesamecare-oss/redlock") != "@sesamecare-oss+redlock" {
		t.Error(dirName("@sesamecare-oss/redlock"))
	}
}
