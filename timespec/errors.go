package timespec

import (
	"fmt"
	"sort"
	"strings"
)

// Error lists what is wrong with a spec, one message per field. Field keys
// are relative to the spec ("cron_expressions[0]", "intervals[1].every",
// "timezone"); the service files them under "spec." and maps the error to
// its validation_failed (or spec_never_fires) answer.
type Error struct {
	// NeverFires says every problem is a well-formed part that can never
	// fire (e.g. "0 0 30 2 *"), as opposed to one that cannot be read.
	NeverFires bool
	Fields     map[string]string
}

func (e *Error) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %s", k, e.Fields[k]))
	}
	return "invalid spec: " + strings.Join(parts, "; ")
}

// add records a message for field, keeping the first message per field.
func (e *Error) add(field, message string) {
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	if _, ok := e.Fields[field]; !ok {
		e.Fields[field] = message
	}
}
