package timespec

import (
	"strconv"
	"strings"
	"sync"

	"github.com/tidelinehq/tideline/models"
)

// specCacheSize bounds the compiled specs kept. A compiled spec is a few
// KB; schedules share specs heavily (every "0 * * * *" in UTC is one
// entry), and a spec compiled again when evicted costs a few µs.
const specCacheSize = 4096

// specs caches compiled specs by content for the process: the tick
// compiles each due schedule's spec on every fire, and without it each
// fire parsed its cron expressions and loaded its zone again.
var specs = &specCache{entries: map[string]*CompiledSpec{}}

type specCache struct {
	mu      sync.RWMutex
	entries map[string]*CompiledSpec
}

func (c *specCache) get(key string) (*CompiledSpec, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.entries[key]
	return s, ok
}

// put keeps s; a full cache first drops one entry (the map's arbitrary
// first), which costs its next user one compile and keeps the bound.
func (c *specCache) put(key string, s *CompiledSpec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= specCacheSize {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = s
}

// specKey is spec's content as one string: every part length-prefixed,
// so no two different specs share a key whatever their text holds.
func specKey(spec models.Spec, calendars []*Calendar) string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	field(spec.Timezone)
	b.WriteString(strconv.Itoa(len(spec.CronExpressions)))
	b.WriteByte('c')
	for _, e := range spec.CronExpressions {
		field(e)
	}
	b.WriteString(strconv.Itoa(len(spec.Intervals)))
	b.WriteByte('i')
	for _, iv := range spec.Intervals {
		field(iv.Every)
		field(iv.Offset)
	}
	field(spec.StartAt)
	field(spec.EndAt)
	b.WriteString(strconv.Itoa(len(spec.At)))
	b.WriteByte('a')
	for _, at := range spec.At {
		field(at)
	}
	// A listed calendar stands in the key by its content, so an edited
	// calendar (or one missing) is a different spec.
	field(spec.OnExcluded)
	b.WriteString(strconv.Itoa(len(spec.ExcludeCalendars)))
	b.WriteByte('x')
	for _, name := range spec.ExcludeCalendars {
		field(name)
		key := "-"
		for _, cal := range calendars {
			if cal != nil && cal.name == name {
				key = cal.key
				break
			}
		}
		field(key)
	}
	return b.String()
}
