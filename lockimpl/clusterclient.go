package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ClusterClient is the client of a lock on a Redis Cluster (Config.Cluster): go-redis's
// cluster client with c.Addrs as its seeds, which learns from the nodes which one serves
// each slot and follows MOVED and ASK. It keeps NewClient's guarantees: a command whose
// outcome is unknown (a timeout, a lost connection) is never sent again, because the
// cluster client would retry it on the same node and then another (see onceHook); what
// it sends on was not executed where it went (a failed dial; MOVED, ASK, READONLY: the
// node refused it). After an unknown outcome it reloads the slot map, so that the next
// command finds a promoted replica. c.Via redirects the addresses the nodes name.
func (c Config) ClusterClient() (*redis.ClusterClient, error) {
	if len(c.Addrs) == 0 {
		return nil, errors.New("a Redis Cluster lock needs the address of at least one node")
	}
	for _, a := range c.Addrs {
		if !c.Access[a].IsZero() {
			return nil, fmt.Errorf("node %s: a Redis Cluster with credentials or TLS is not supported yet", a)
		}
	}
	opts := &redis.ClusterOptions{
		Addrs:                    c.Addrs,
		Protocol:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		MaxRetries:               -1,
		DialerRetries:            1,
		DialTimeout:              c.Timeout,
		ReadTimeout:              c.Timeout,
		WriteTimeout:             c.Timeout,
		ContextTimeoutEnabled:    true,
		PoolSize:                 failoverPoolSize,
	}
	if len(c.Via) > 0 {
		opts.Dialer = viaDialer(c.Via, c.Timeout)
	}
	cc := redis.NewClusterClient(opts)
	cc.OnNewNode(func(node *redis.Client) { node.AddHook(onceHook{reload: cc.ReloadState}) })
	return cc, nil
}

// onceHook hides, from the cluster client around a node's client, what would make it
// send a command again: an error after which the command's outcome is unknown (a
// timeout, EOF) comes back as an opaque error with the same text, and the slot map is
// reloaded (in the background). The server's own answers (MOVED, ASK, READONLY,
// CLUSTERDOWN, NOREPLICAS, a script's error), redis.Nil, a failed dial (nothing was
// sent) and the caller's own deadline pass as they are.
type onceHook struct {
	reload func(context.Context)
}

func (onceHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h onceHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if opaque := once(err); opaque != err {
			cmd.SetErr(opaque)
			h.reload(context.WithoutCancel(ctx))
			return opaque
		}
		return err
	}
}

func (onceHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if opaque := once(cmd.Err()); opaque != cmd.Err() {
				cmd.SetErr(opaque)
			}
		}
		return once(err)
	}
}

// once is err, or an opaque error with its text when the cluster client would send the
// command again for it.
func once(err error) error {
	var reply redis.Error
	var op *net.OpError
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.Is(err, redis.ErrClosed), errors.As(err, &reply):
		return err
	case errors.As(err, &op) && op.Op == "dial":
		return err // nothing was sent
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err // the caller's deadline: never retried, and callers look for it
	}
	return unknownOutcome{err.Error()}
}

// unknownOutcome is an error the command's fate is unknown after: no Unwrap, no Timeout,
// so that nothing takes it for a reason to send the command again.
type unknownOutcome struct{ msg string }

func (e unknownOutcome) Error() string { return e.msg }

// clusterFenceKey is the fence counter's key of a lock on a Redis Cluster: in the lock
// key's hash slot, so that one script can set both (hash tags). A key with a hash tag
// of its own keeps it; any other is wrapped in one.
func clusterFenceKey(key string) (string, error) {
	if tag := hashTag(key); tag != key {
		return key + ":fence", nil
	}
	fk := "{" + key + "}:fence"
	if hashTag(fk) != key {
		return "", fmt.Errorf("key %q: no fence key in its hash slot (a brace without a hash tag)", key)
	}
	return fk, nil
}

// hashTag is the part of key Redis Cluster hashes: between the first { and the next }
// when that is not empty, else the whole key.
func hashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}
