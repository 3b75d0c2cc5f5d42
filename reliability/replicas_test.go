package reliability

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// TestReplicasSurviveSIGKILL runs three `tideline serve` replicas on one
// PostgreSQL schema while schedules fire every second, and kills replicas
// with SIGKILL and restarts them at random (at least one replica is always
// up). Afterwards the database must show every occurrence fired at most
// once and none lost beyond the missed-fire policy (verifyExactlyOnce).
//
// CI size: 8 s, 20 schedules. Full size (docs/RELIABILITY.md):
//
//	TIDELINE_RELIABILITY_SECONDS=120 TIDELINE_RELIABILITY_SCHEDULES=200 \
//	  go test ./reliability -run TestReplicasSurviveSIGKILL -v -timeout 30m
//
// TIDELINE_RELIABILITY_SEED replays a chaos schedule (the seed is logged).
func TestReplicasSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	seconds := envInt(t, "TIDELINE_RELIABILITY_SECONDS", 8)
	n := envInt(t, "TIDELINE_RELIABILITY_SCHEDULES", 20)
	seed := uint64(time.Now().UnixNano())
	if raw := os.Getenv("TIDELINE_RELIABILITY_SEED"); raw != "" {
		var err error
		if seed, err = strconv.ParseUint(raw, 10, 64); err != nil {
			t.Fatalf("TIDELINE_RELIABILITY_SEED=%q: %v", raw, err)
		}
	}
	t.Logf("chaos seed %d (replay with TIDELINE_RELIABILITY_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	url := dbtest.PostgresURL(t)
	db := openDB(t, url)
	replicas := make([]*replica, 3)
	for i := range replicas {
		replicas[i] = newReplica(t, "replica-"+strconv.Itoa(i), url, "--loop-period", "100ms", "--log-level", "warn")
	}
	// Three replicas migrating one empty schema at once is part of the test.
	started := make(chan error, len(replicas))
	for _, r := range replicas {
		go func() { started <- r.tryStart() }()
	}
	for range replicas {
		if err := <-started; err != nil {
			t.Fatal(err)
		}
	}
	createIntervalSchedules(t, replicas[0], "r", n, "PT1S")

	// Chaos: every 150–1200 ms either SIGKILL a running replica (only when
	// another one is up) or restart a dead one.
	var kills, restarts int
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for time.Now().Before(end) {
		<-timer.C
		var up, down []*replica
		for _, r := range replicas {
			if r.running() {
				up = append(up, r)
			} else {
				down = append(down, r)
			}
		}
		if len(down) > 0 && (len(up) < 2 || rng.IntN(2) == 0) {
			down[rng.IntN(len(down))].start()
			restarts++
		} else {
			up[rng.IntN(len(up))].kill()
			kills++
		}
		timer.Reset(time.Duration(150+rng.IntN(1050)) * time.Millisecond)
	}
	chaosEnd := time.Now()
	t.Logf("chaos: %d SIGKILLs, %d restarts in %s", kills, restarts, time.Duration(seconds)*time.Second)
	if kills == 0 {
		t.Fatal("the chaos schedule killed nothing")
	}

	// Liveness: bring every replica back and wait until each schedule has
	// fired again after the chaos ended.
	for _, r := range replicas {
		if !r.running() {
			r.start()
		}
	}
	ctx := ctxTimeout(t)
	waitFor(t, 60*time.Second, 50*time.Millisecond, "every schedule fires after the chaos", func() (bool, error) {
		fired, err := firedSince(ctx, db, "r", chaosEnd.Add(time.Second))
		return fired == int64(n), err
	})
	for _, r := range replicas {
		r.stop()
	}

	stats := verifyExactlyOnce(t, db, "r")
	t.Logf("verified: %s", stats)
	if least := n * seconds / 4; stats.Fires < least {
		t.Errorf("only %d fires for %d schedules over %ds: the replicas barely fired (want at least %d)", stats.Fires, n, seconds, least)
	}
}
