package scheduling

import (
	"context"
	"sync"
)

// writerTurns puts the fire pass first on a single-writer database
// (SQLite: one connection for everything). Without it the HTTP target
// executor's claim and completion transactions — up to one per slot, all
// queued for the one connection — sat in front of every tick: measured
// with 10,000 HTTP-target runs draining, the 10,000 took 29.5 s to fire
// instead of 8.7 s and an every-second probe fired up to 27 s late
// (docs/PERFORMANCE.md, BenchmarkHTTPTargets10k).
//
// A fire pass announces itself (fire); background work takes a turn
// (background) only while no pass is announced and no other background
// turn runs. So a pass waits for at most the one background transaction
// already holding the connection, and the executor's transactions run one
// at a time — as the single connection ran them anyway. On a database
// with a pool of writers (PostgreSQL) turns are free: both return at once.
type writerTurns struct {
	enabled bool

	mu      sync.Mutex
	firing  int  // fire passes announced and not yet done
	busy    bool // a background turn is running
	changed chan struct{}
}

func newWriterTurns(singleWriter bool) *writerTurns {
	return &writerTurns{enabled: singleWriter, changed: make(chan struct{})}
}

// fire announces a fire pass; call the returned func when it is done.
func (t *writerTurns) fire() (done func()) {
	if !t.enabled {
		return func() {}
	}
	t.mu.Lock()
	t.firing++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		t.firing--
		t.signal()
		t.mu.Unlock()
	}
}

// background waits for a background turn: no fire pass announced and no
// other background turn running. It fails only when ctx ends first.
func (t *writerTurns) background(ctx context.Context) (done func(), err error) {
	if !t.enabled {
		return func() {}, nil
	}
	for {
		t.mu.Lock()
		if t.firing == 0 && !t.busy {
			t.busy = true
			t.mu.Unlock()
			return func() {
				t.mu.Lock()
				t.busy = false
				t.signal()
				t.mu.Unlock()
			}, nil
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		}
	}
}

// signal wakes every waiter to look again; t.mu is held.
func (t *writerTurns) signal() {
	close(t.changed)
	t.changed = make(chan struct{})
}
