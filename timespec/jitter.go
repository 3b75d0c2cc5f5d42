package timespec

import "time"

// Rand is the randomness Jitter needs; *math/rand/v2.Rand satisfies it, and
// tests pass a deterministic source.
type Rand interface {
	Int64N(n int64) int64
}

// Jitter returns a uniformly random delay of whole seconds in [0, maxSeconds]
// (both ends included, as CONTRACT §3 says). It is drawn afresh by the caller at
// every computation of a next fire; zero or less means no jitter.
func Jitter(r Rand, maxSeconds int) time.Duration {
	if maxSeconds <= 0 {
		return 0
	}
	return time.Duration(r.Int64N(int64(maxSeconds)+1)) * time.Second
}
