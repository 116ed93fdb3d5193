package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/exactlyonce"
)

// Fencing is the protected store's rule for fencing tokens.
type Fencing string

// The store's fencing modes (docs/design.md, P2).
const (
	FencingOff    Fencing = "off"    // every read and write is accepted
	FencingWrites Fencing = "writes" // a write with fence f is accepted iff f ≥ the largest fence seen on writes
	FencingFull   Fencing = "full"   // reads and writes carry the fence; one below the largest seen is rejected
)

// ParseFencing reads a fencing mode.
func ParseFencing(s string) (Fencing, error) {
	switch f := Fencing(s); f {
	case FencingOff, FencingWrites, FencingFull:
		return f, nil
	}
	return "", fmt.Errorf("unknown fencing mode %q (want off, writes or full)", s)
}

// ErrRejected is the store refusing a read or write for its stale fence.
var ErrRejected = errors.New("rejected by the store: stale fence")

// The register lives in one hash per key: the value and the largest fence seen. The
// scripts make check-and-apply atomic in the store, as a fencing-aware resource must.
var (
	readScript = redis.NewScript(`
local v = tonumber(redis.call('HGET', KEYS[1], 'value') or '0')
if ARGV[1] == 'full' then
  local f = tonumber(ARGV[2])
  local m = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
  if f < m then return {0, v} end
  if f > m then redis.call('HSET', KEYS[1], 'fence', f) end
end
return {1, v}`)
	writeScript = redis.NewScript(`
if ARGV[1] ~= 'off' then
  local f = tonumber(ARGV[2])
  local m = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
  if f < m then return 0 end
  if f > m then redis.call('HSET', KEYS[1], 'fence', f) end
end
redis.call('HSET', KEYS[1], 'value', ARGV[3])
return 1`)
)

// Store is the protected resource: a register per key on its own Redis server that
// applies the fencing rule of its mode.
type Store struct {
	rdb  *redis.Client
	mode Fencing
}

// NewStore connects to the store server at addr. Retries are off: a retried write could
// apply twice while the history shows it once.
func NewStore(addr string, mode Fencing, timeout time.Duration) *Store {
	return newStore(exactlyonce.Options(addr, timeout), mode)
}

// newStore is NewStore with the client's options (an external store's Access applied).
func newStore(opts *redis.Options, mode Fencing) *Store {
	opts.PoolSize = 4
	return &Store{mode: mode, rdb: redis.NewClient(opts)}
}

// StoreKeyPrefix begins the name of every register the store keeps.
const StoreKeyPrefix = "locklab:store:"

func storeKey(key string) string { return StoreKeyPrefix + key }

// Read returns the key's value, or ErrRejected when the fence is stale (mode full).
func (s *Store) Read(ctx context.Context, key string, fence int64) (int64, error) {
	res, err := readScript.Run(ctx, s.rdb, []string{storeKey(key)}, string(s.mode), fence).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("store read %s: %w", key, err)
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("store read %s: unexpected reply %v", key, res)
	}
	if res[0] == 0 {
		return res[1], ErrRejected
	}
	return res[1], nil
}

// Write sets the key's value, or returns ErrRejected when the fence is stale.
func (s *Store) Write(ctx context.Context, key string, fence, value int64) error {
	ok, err := writeScript.Run(ctx, s.rdb, []string{storeKey(key)}, string(s.mode), fence, value).Int64()
	if err != nil {
		return fmt.Errorf("store write %s: %w", key, err)
	}
	if ok == 0 {
		return ErrRejected
	}
	return nil
}

// Close closes the connections.
func (s *Store) Close() error { return s.rdb.Close() }
