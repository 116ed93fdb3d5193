// Command locklab-lockserve runs one of locklab's in-process lock implementations
// (watchdog, redsync, rueidislock, …) as a client of the subprocess protocol
// (docs/subprocess-protocol.md), so that it runs in a process of its own: a
// stop-the-world pause (client-pause mode process) then freezes its renewal goroutines
// with the holder, as a long GC pause would.
//
//	locklab-lockserve IMPL
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/subprocess"
	"github.com/locklab/locklab/locks"
)

func main() {
	if err := serve(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "locklab-lockserve:", err)
		os.Exit(1)
	}
}

type request struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"`
	Key   string `json:"key"`
	TTLMS int64  `json:"ttl_ms"`
	Token string `json:"token"`
	Fence int64  `json:"fence"`
}

type answer struct {
	ID         int64    `json:"id"`
	Outcome    string   `json:"outcome"`
	Token      string   `json:"token,omitempty"`
	Fence      int64    `json:"fence,omitempty"`
	ValidityMS *float64 `json:"validity_ms,omitempty"`
	GrantedMS  *float64 `json:"granted_ms,omitempty"`
	Error      string   `json:"error,omitempty"`
}

func serve(args []string, in io.Reader, out io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: locklab-lockserve IMPL")
	}
	impl, err := locks.All().Get(args[0])
	if err != nil {
		return err
	}
	if impl.Mutant || strings.HasSuffix(impl.Name, "-process") {
		return fmt.Errorf("%s: serve a correct in-process implementation", impl.Name)
	}
	cfg, err := configFromEnv()
	if err != nil {
		return err
	}
	if wire := os.Getenv(subprocess.EnvOptions); wire != "" {
		if cfg.Options, err = impl.OptionsFromWire([]byte(wire)); err != nil {
			return fmt.Errorf("%s: %w", subprocess.EnvOptions, err)
		}
	}
	l, err := impl.New(cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	enc := json.NewEncoder(out)
	hello := map[string]any{"hello": subprocess.SubprocessProtocol, "name": impl.Name + " (out of process)", "fencing": impl.Fencing, "extend": !impl.NoExtend}
	if err := enc.Encode(hello); err != nil {
		return err
	}
	// Leases by token: the in-process implementations keep their own state per lease.
	leases := map[string]lockimpl.Lease{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("bad request %q: %w", sc.Text(), err)
		}
		a := handle(l, cfg.Timeout, leases, r)
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
	return sc.Err()
}

func handle(l lockimpl.Locker, timeout time.Duration, leases map[string]lockimpl.Lease, r request) answer {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	a := answer{ID: r.ID}
	ttl := time.Duration(r.TTLMS) * time.Millisecond
	lease, known := leases[r.Token]
	if !known {
		lease = lockimpl.Lease{Key: r.Key, Token: r.Token, Fence: r.Fence}
	}
	var err error
	switch r.Op {
	case "acquire":
		lease, err = l.Acquire(ctx, r.Key, ttl)
		if err == nil {
			leases[lease.Token] = lease
			a.Token, a.Fence = lease.Token, lease.Fence
			v := float64(lease.Validity) / float64(time.Millisecond)
			a.ValidityMS = &v
		}
	case "release":
		err = l.Release(ctx, lease)
		delete(leases, r.Token)
	case "extend":
		lease, err = l.Extend(ctx, lease, ttl)
		if err == nil {
			leases[lease.Token] = lease
			v := float64(lease.Validity) / float64(time.Millisecond)
			a.ValidityMS = &v
		}
	default:
		err = fmt.Errorf("unknown op %q", r.Op)
	}
	// The lease the servers granted, when the implementation reports it (etcd: whole
	// seconds), also after an error of unknown outcome that followed the grant.
	if g := cmp.Or(lease.Granted, lockimpl.GrantedOf(err)); g > 0 && r.Op != "release" {
		ms := float64(g) / float64(time.Millisecond)
		a.GrantedMS = &ms
	}
	switch {
	case err == nil:
		a.Outcome = "ok"
	case errors.Is(err, lockimpl.ErrNotAcquired), errors.Is(err, lockimpl.ErrNotHeld):
		a.Outcome, a.Error = "fail", err.Error()
	default:
		a.Outcome, a.Error = "unknown", err.Error()
	}
	return a
}

// configFromEnv reads the servers and the timeout locklab passes to a client.
func configFromEnv() (lockimpl.Config, error) {
	list := func(name string) []string {
		var out []string
		for _, s := range strings.Split(os.Getenv(name), ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	cfg := lockimpl.Config{Addrs: list(subprocess.EnvAddrs), Sentinels: list(subprocess.EnvSentinels), Master: os.Getenv(subprocess.EnvMaster)}
	ms, err := strconv.Atoi(os.Getenv(subprocess.EnvTimeoutMS))
	if err != nil || ms <= 0 {
		return cfg, fmt.Errorf("%s=%q: want a positive number of milliseconds", subprocess.EnvTimeoutMS, os.Getenv(subprocess.EnvTimeoutMS))
	}
	cfg.Timeout = time.Duration(ms) * time.Millisecond
	if cfg.Access, err = subprocess.AccessFromEnv(cfg.Addrs, os.LookupEnv); err != nil {
		return cfg, err
	}
	if r := os.Getenv(subprocess.EnvWaitReplicas); r != "" {
		n, err := strconv.Atoi(r)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("%s=%q: want a positive number of replicas", subprocess.EnvWaitReplicas, r)
		}
		ms, err := strconv.Atoi(os.Getenv(subprocess.EnvWaitTimeoutMS))
		if err != nil || ms < 1 {
			return cfg, fmt.Errorf("%s=%q: want a positive number of milliseconds", subprocess.EnvWaitTimeoutMS, os.Getenv(subprocess.EnvWaitTimeoutMS))
		}
		cfg.Wait = lockimpl.Wait{Replicas: n, Timeout: time.Duration(ms) * time.Millisecond}
	}
	if via := list(subprocess.EnvVia); len(via) > 0 {
		cfg.Via = map[string]string{}
		for _, kv := range via {
			from, to, ok := strings.Cut(kv, "=")
			if !ok {
				return cfg, fmt.Errorf("%s: bad entry %q: want from=to", subprocess.EnvVia, kv)
			}
			cfg.Via[from] = to
		}
	}
	return cfg, nil
}
