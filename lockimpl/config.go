package lockimpl

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// DefaultTimeout is the per-command network timeout when Config.Timeout is 0.
const DefaultTimeout = 2 * time.Second

// Config is what every implementation is built from.
type Config struct {
	Addrs     []string      // lock servers (single topology: one)
	Sentinels []string      // replicated topology: follow the primary through these Sentinels
	Master    string        // replicated topology: the master name the Sentinels monitor
	Clock     Clock         // nil → SystemClock{}
	Step      StepFunc      // nil → no hook
	Timeout   time.Duration // per-command network timeout; 0 → DefaultTimeout
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// singleAddr is the one server of a single-instance implementation.
func (c Config) singleAddr() (string, error) {
	if len(c.Addrs) != 1 {
		return "", fmt.Errorf("single-instance lock needs exactly one address, got %d", len(c.Addrs))
	}
	return c.Addrs[0], nil
}

// newClient is a go-redis client that sends each command exactly once, so that an
// outcome is never misreported. Why no retries: a retried SET NX whose first attempt
// succeeded but whose reply was lost answers "not acquired" to the lock's own holder.
// Dial failures are not retried either (nothing was sent, but the timeout stays bounded).
// No HELLO, CLIENT SETINFO or maintenance handshake: only the lock's commands reach Redis.
func newClient(addr string, timeout time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     addr,
		Protocol:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		MaxRetries:               -1,
		DialerRetries:            1,
		DialTimeout:              timeout,
		ReadTimeout:              timeout,
		WriteTimeout:             timeout,
		ContextTimeoutEnabled:    true, // a caller's deadline also bounds the command
	})
}
