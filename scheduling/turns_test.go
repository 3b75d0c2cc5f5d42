package scheduling

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// tryTurn asks for a background turn without waiting: background checks
// the turns before it looks at its context, so with one already ended it
// answers whether the turn is free right now.
func tryTurn(turns *writerTurns) (func(), bool) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done, err := turns.background(ctx)
	return done, err == nil
}

func TestWriterTurnsPutTheFirePassFirst(t *testing.T) {
	turns := newWriterTurns(true)

	firing := turns.fire()
	_, ok := tryTurn(turns)
	require.False(t, ok, "a background turn began while a fire pass was announced")

	// A waiter parks until the pass is done, then gets its turn.
	got := make(chan func())
	go func() {
		done, err := turns.background(context.Background())
		if err == nil {
			got <- done
		}
	}()
	firing()
	first := <-got

	_, ok = tryTurn(turns)
	require.False(t, ok, "two background turns at once")
	// A pass announced while a turn runs goes before the next turn.
	firing = turns.fire()
	first()
	_, ok = tryTurn(turns)
	require.False(t, ok, "a background turn began ahead of an announced fire pass")
	firing()
	done, ok := tryTurn(turns)
	require.True(t, ok, "no pass and no turn: the turn is free")
	done()
}

func TestWriterTurnsEndWithTheContext(t *testing.T) {
	turns := newWriterTurns(true)
	defer turns.fire()()
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	_, err := turns.background(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

func TestWriterTurnsAreFreeWithManyWriters(t *testing.T) {
	turns := newWriterTurns(false)
	defer turns.fire()()
	a, ok := tryTurn(turns)
	require.True(t, ok)
	b, ok := tryTurn(turns)
	require.True(t, ok, "PostgreSQL: no turn waits")
	a()
	b()
}
