package handlers

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// zoneAreas are the first parts of the canonical IANA names (Area/City):
// the suggestions leave out the legacy aliases (US/Eastern, GB, EST5EDT,
// Etc/GMT+5) that tzdata keeps for old configurations. Any name Go knows is
// still accepted; the form only suggests.
var zoneAreas = []string{"Africa", "America", "Antarctica", "Arctic", "Asia", "Atlantic", "Australia", "Europe", "Indian", "Pacific"}

// isSuggestedZone reports whether a tzdata name is one the form suggests.
func isSuggestedZone(name string) bool {
	area, _, ok := strings.Cut(name, "/")
	return ok && slices.Contains(zoneAreas, area)
}

// zoneNames are the time-zone input's suggestions: UTC, then every
// Area/City zone of Go's tzdata (the binary embeds it: time/tzdata in
// main.go), about 500 names. Go cannot list the zones it embeds, so the
// names are kept in console_zones_list.go, generated from the same data
// (TestZoneListIsGoTzdata checks it and rewrites it on request). Each name
// is loaded once, the first time a form asks, so a name this build could
// not load is never suggested.
var zoneNames = sync.OnceValue(func() []string {
	out := make([]string, 0, len(tzdataZones)+1)
	out = append(out, "UTC")
	for _, name := range tzdataZones {
		if _, err := time.LoadLocation(name); err == nil {
			out = append(out, name)
		}
	}
	return out
})
