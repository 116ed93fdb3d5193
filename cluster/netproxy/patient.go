package netproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// patientRetry is how often a patient forwarder dials an upstream that refused it.
const patientRetry = 10 * time.Millisecond

// PatientLink is Link to an upstream that may not listen yet when a party dials it, and
// will soon: a ZooKeeper leader's quorum port, which it opens only once elected, while its
// followers, elected at the same instant, dial it at once. Without a link they would be
// refused and dial again; through a plain link their connection is taken, and closed as
// soon as the link finds no upstream, which a follower takes for a leader that failed.
// A patient link takes the connection, and dials upstream again every few milliseconds
// for up to patience before it closes it, as the party would have. It leads to a
// forwarder of its own in front of upstream (one for all the links to it), behind the
// link's toxics. patience 0 is Link.
func (n *Net) PatientLink(name, upstream string, patience time.Duration) (listen string, err error) {
	if patience <= 0 {
		return n.Link(name, upstream)
	}
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return "", fmt.Errorf("link %s: upstream %q: %w", name, upstream, err)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return "", fmt.Errorf("link %s: %w", name, errNetClosed)
	}
	f, ok := n.patient[upstream]
	if !ok {
		if f, err = newForwarder(upstream, patience); err != nil {
			n.mu.Unlock()
			return "", fmt.Errorf("link %s: %w", name, err)
		}
		n.patient[upstream] = f
	}
	n.mu.Unlock()
	return n.Link(name, f.ln.Addr().String())
}

// forwarder pipes each connection it takes to upstream, dialing it patiently.
type forwarder struct {
	ln       net.Listener
	upstream string
	patience time.Duration
	wg       sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func newForwarder(upstream string, patience time.Duration) (*forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("forwarder to %s: %w", upstream, err)
	}
	f := &forwarder{ln: ln, upstream: upstream, patience: patience, conns: map[net.Conn]struct{}{}}
	f.wg.Go(f.serve)
	return f, nil
}

func (f *forwarder) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		if !f.track(c) {
			return
		}
		f.wg.Go(func() { f.forward(c) })
	}
}

// track notes c, to be closed by close; false (and c closed) once the forwarder is closed.
func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		c.Close()
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

// forward dials upstream for down until it answers or patience runs out, then pipes both
// ways until either side closes, and closes both.
func (f *forwarder) forward(down net.Conn) {
	defer f.untrack(down)
	deadline := time.Now().Add(f.patience)
	var up net.Conn
	for {
		var err error
		if up, err = net.DialTimeout("tcp", f.upstream, f.patience); err == nil {
			break
		}
		if time.Now().After(deadline) || f.isClosed() {
			return
		}
		time.Sleep(patientRetry)
	}
	if !f.track(up) {
		return
	}
	defer f.untrack(up)
	done := make(chan struct{}, 2)
	for _, p := range [][2]net.Conn{{up, down}, {down, up}} {
		go func() {
			_, _ = io.Copy(p[0], p[1])
			done <- struct{}{}
		}()
	}
	<-done // one side ended: end the other too, and wait for its copy
	down.Close()
	up.Close()
	<-done
}

func (f *forwarder) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// close stops taking connections, closes every one it holds and waits for its goroutines.
func (f *forwarder) close() error {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	err := f.ln.Close()
	f.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
