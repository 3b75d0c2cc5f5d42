package fairshare_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/fairshare"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestCapsLeaveRoomForOtherTenants(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(0, 0)}
	p := fairshare.New(fairshare.Limits{Total: 8}, c.now)
	require.Equal(t, fairshare.Limits{Total: 8, PerTenant: 4, PerHost: 2, FailuresToOpen: 5, Backoff: 5 * time.Second, MaxBackoff: 5 * time.Minute}, p.Limits())

	// One tenant's hung host holds two slots; its other hosts two more;
	// then the tenant is at its cap.
	var held []*fairshare.Slot
	for _, host := range []string{"dead", "dead", "b", "c"} {
		s, ok := p.Acquire("a", host)
		require.True(t, ok, host)
		held = append(held, s)
	}
	_, ok := p.Acquire("a", "dead")
	require.False(t, ok, "per-host cap")
	require.Zero(t, p.Room("a", "d"), "per-tenant cap")
	require.Equal(t, 2, p.Room("b", "dead"), "another tenant calling the same host has its own lane")
	for range 4 {
		_, ok := p.Acquire("b", "x"+time.Duration(len(held)).String())
		require.True(t, ok)
		held = append(held, nil)
	}
	require.Zero(t, p.Free())
	require.Zero(t, p.Room("c", "x"))
	held[0].Release(true)
	select {
	case <-p.Freed():
	default:
		t.Fatal("a release signals Freed")
	}
	require.Equal(t, 1, p.Room("c", "x"))
	held[0].Release(true) // a second release is a no-op
	require.Equal(t, 1, p.Free())
}

func TestBreakerOpensBacksOffAndProbes(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(0, 0)}
	p := fairshare.New(fairshare.Limits{Total: 16, FailuresToOpen: 3, Backoff: time.Second, MaxBackoff: 4 * time.Second}, c.now)
	fail := func() {
		s, ok := p.Acquire("a", "dead")
		require.True(t, ok)
		s.Release(false)
	}
	for range 3 {
		fail()
	}
	require.True(t, p.Open("a", "dead"))
	require.Zero(t, p.Room("a", "dead"), "open: no slot, so a dead receiver holds none")
	require.Equal(t, 4, p.Room("a", "alive"), "the tenant's other lanes are unaffected")
	c.advance(time.Second)
	require.Equal(t, 1, p.Room("a", "dead"), "half open: one probe")
	probe, ok := p.Acquire("a", "dead")
	require.True(t, ok)
	require.Zero(t, p.Room("a", "dead"), "one probe at a time")
	probe.Release(false)
	require.True(t, p.Open("a", "dead"))
	c.advance(time.Second)
	require.Zero(t, p.Room("a", "dead"), "the backoff doubled")
	c.advance(time.Second)
	probe, ok = p.Acquire("a", "dead")
	require.True(t, ok)
	probe.Release(true)
	require.False(t, p.Open("a", "dead"))
	require.Equal(t, 4, p.Room("a", "dead"), "closed again after a success")
}
