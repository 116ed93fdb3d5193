package faketime

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// Clock is the content of one node's libfaketime file. libfaketime reads
// "+X xR" as: server time = S + X + (t − S)·R, where t is the real time and S the real
// time at which libfaketime started in the process. The clock is kept as what the harness
// asked for (at real time base the server read base+offset, advancing at rate since) and
// the file is derived from it for the current process's S, so that a restart, which
// changes S, does not move the clock.
//
// A server runs with FAKETIME_TIMESTAMP_FILE set to Path (Setup.Environ does that); the
// harness calls Started just before each start of its process and Set to move its clock.
type Clock struct {
	path string

	mu     sync.Mutex
	start  time.Time // S: real time just before the current process started
	base   time.Time
	offset time.Duration
	rate   float64
}

// NewClock is a clock kept in the file at path that reads the real time until Set moves
// it. It writes the file at the first Started or Set.
func NewClock(path string) *Clock { return &Clock{path: path, rate: 1} }

// Path is the file libfaketime reads.
func (c *Clock) Path() string { return c.path }

// Set makes the server read now+offset at now, advancing at rate.
func (c *Clock) Set(now time.Time, offset time.Duration, rate float64) error {
	if rate <= 0 {
		return fmt.Errorf("clock rate %g: want a positive speed factor (1 = normal)", rate)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base, c.offset, c.rate = now, offset, rate
	return c.writeLocked()
}

// Calibrate corrects S by a reading of the server's clock at a rate other than 1: lag is
// how far the server read behind the clock as set (negative: ahead). Started records S
// just before the process starts, but libfaketime takes its own S when it initialises
// inside the process, a start-up later (a hundred milliseconds on a loaded machine);
// at rate R the server then reads (S − S')·(R − 1) off, for as long as the process runs.
// The lag tells S' = S + lag/(R − 1), and the file is written for it.
func (c *Clock) Calibrate(lag time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rate == 1 {
		return nil // S does not matter at rate 1: nothing to learn, nothing to correct
	}
	c.start = c.start.Add(time.Duration(float64(lag) / (c.rate - 1)))
	return c.writeLocked()
}

// Started records that a process is about to start at now, and writes its file.
func (c *Clock) Started(now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.base.IsZero() {
		c.base = now
	}
	c.start = now
	return c.writeLocked()
}

// OffsetAt is the server clock's lead over the real one at real time now.
func (c *Clock) OffsetAt(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset + time.Duration(float64(now.Sub(c.base))*(c.rate-1))
}

// line is the file's content: X = offset + (S − base)·(R − 1) solves
// S + X + (t − S)·R = t + offset + (t − base)·(R − 1) for every t. Caller holds mu.
func (c *Clock) line() string {
	x := c.offset.Seconds() + c.start.Sub(c.base).Seconds()*(c.rate-1)
	return fmt.Sprintf("%+.6f x%s\n", x, strconv.FormatFloat(c.rate, 'f', -1, 64))
}

// writeLocked replaces the file at once (write and rename), so that libfaketime, which
// reads it at every clock reading, never sees half of it. Caller holds mu.
func (c *Clock) writeLocked() error {
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(c.line()), 0o644); err != nil {
		return fmt.Errorf("write faketime file: %w", err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return errors.Join(fmt.Errorf("replace faketime file: %w", err), os.Remove(tmp))
	}
	return nil
}
