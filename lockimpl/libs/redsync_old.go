//go:build redsync_v4pre7 || redsync_v4pre12

package libs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/redis/go-redis/v9"
)

// The redsync adapter against releases before v4.12.0 (redsync.go lists the variants):
// what both old variants share.

// redsyncPool is a redsync redis.Pool over a go-redis v9 client, with the interface
// redsync had from v4.0.3 to v4.18 (a context per Get, none per command). Like
// redsync's own goredis pools it calls the client's commands directly, a missing key
// reading as "", except Eval: it sends EVAL with the script's source, one command per
// call, where redsync's pools send EVALSHA and resend EVAL on NOSCRIPT (two round trips
// to a server that has not seen the script yet, the second one sent after the first
// reply came back: on a slow link the script would run a whole round trip late).
func redsyncPool(c redis.UniversalClient) redsyncredis.Pool { return oldRedsyncPool{c} }

type oldRedsyncPool struct{ c redis.UniversalClient }

func (p oldRedsyncPool) Get(ctx context.Context) (redsyncredis.Conn, error) {
	if ctx == nil { // Lock(), Unlock() and Extend() pass nil before v4.5
		ctx = context.Background()
	}
	return oldRedsyncConn{p.c, ctx}, nil
}

type oldRedsyncConn struct {
	c   redis.UniversalClient
	ctx context.Context
}

func (c oldRedsyncConn) Get(name string) (string, error) {
	v, err := c.c.Get(c.ctx, name).Result()
	return v, redsyncNoNil(err)
}

func (c oldRedsyncConn) Set(name string, value string) (bool, error) {
	reply, err := c.c.Set(c.ctx, name, value, 0).Result()
	return reply == "OK", err
}

func (c oldRedsyncConn) SetNX(name string, value string, expiry time.Duration) (bool, error) {
	return c.c.SetNX(c.ctx, name, value, expiry).Result()
}

func (c oldRedsyncConn) PTTL(name string) (time.Duration, error) {
	return c.c.PTTL(c.ctx, name).Result()
}

func (c oldRedsyncConn) Eval(script *redsyncredis.Script, keysAndArgs ...interface{}) (interface{}, error) {
	keys := make([]string, script.KeyCount)
	for i := range keys {
		keys[i], _ = keysAndArgs[i].(string)
	}
	v, err := c.c.Eval(c.ctx, script.Src, keys, keysAndArgs[script.KeyCount:]...).Result()
	return v, redsyncNoNil(err)
}

// ScriptLoad is not in the interface of the releases this pool serves (redsync's
// Conn gained it later); it lets the variants compile, and be tested, against the
// pinned release too.
func (c oldRedsyncConn) ScriptLoad(script *redsyncredis.Script) error {
	return c.c.ScriptLoad(c.ctx, script.Src).Err()
}

func (c oldRedsyncConn) Close() error { return nil } // the client is the adapter's

func redsyncNoNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// redsyncDrift is redsync's default drift factor (WithDriftFactor, unchanged by the
// adapter), the same in every release.
const redsyncDrift = 0.01

// redsyncUntil is the end of the validity of a call that started at start (the system
// clock), as redsync computes its Until: start + ttl − ttl·drift. Until arrived with
// v4.4.0, and before v4.4.0 an extend has no validity check at all: its ok says only
// that a quorum reset the expiry, at some time during the call.
func redsyncUntil(_ *redsync.Mutex, start time.Time, ttl time.Duration) time.Time {
	return start.Add(ttl - time.Duration(int64(float64(ttl)*redsyncDrift)))
}

func redsyncSetNXOnExtendOption() (redsync.Option, error) {
	return nil, fmt.Errorf("WithSetNXOnExtend arrived with redsync v4.12.0; this locklab-lockserve was built against an older release")
}
