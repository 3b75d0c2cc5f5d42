package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidelinehq/tideline/scheduling"
)

// fieldFlags are the flags of the field table's fields (scheduling.Fields:
// Flag, Usage) that `schedule add` and `schedule update` share. A flag's
// value is the field's text form, read as the console reads its input
// (Field.ParseText); a field in seconds also takes a duration, and a map's
// flag repeats, one key=value each.
type fieldFlags []*fieldFlag

func bindFieldFlags(fs *flag.FlagSet) fieldFlags {
	var out fieldFlags
	for _, f := range scheduling.Fields {
		if f.Flag != "" {
			v := &fieldFlag{field: f}
			fs.Var(v, f.Flag, f.Usage)
			out = append(out, v)
		}
	}
	return out
}

// values are the given flags' fields as JSON, by key.
func (ff fieldFlags) values() (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, v := range ff {
		if !v.given {
			continue
		}
		f, text := v.field, strings.Join(v.texts, "\n")
		if f.Seconds && strings.TrimSpace(text) != "" {
			n, err := parseSeconds(f.Flag, strings.TrimSpace(text))
			if err != nil {
				return nil, err
			}
			text = strconv.FormatInt(n, 10)
		}
		raw, problems := f.ParseText(text)
		if len(problems) > 0 {
			return nil, usagef("invalid --%s %q: %s", f.Flag, text, strings.Join(problems, "; "))
		}
		out[f.Key] = raw
	}
	return out, nil
}

// setOn sets the given flags' fields on doc, a request whose members are
// named by the fields' keys (apijson.CreateSchedule).
func (ff fieldFlags) setOn(doc any) error {
	values, err := ff.values()
	if err != nil || len(values) == 0 {
		return err
	}
	body, err := json.Marshal(values)
	if err != nil {
		return fmt.Errorf("encode the field flags: %w", err)
	}
	return json.Unmarshal(body, doc)
}

// fieldFlag is one field's flag.
type fieldFlag struct {
	field scheduling.Field
	texts []string
	given bool
}

func (v *fieldFlag) String() string { return strings.Join(v.texts, ", ") }

func (v *fieldFlag) Set(s string) error {
	v.given = true
	if !v.field.Repeats() {
		v.texts = []string{s}
		return nil
	}
	k, _, ok := strings.Cut(s, "=")
	if k = strings.TrimSpace(k); !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	for _, prev := range v.texts {
		if pk, _, _ := strings.Cut(prev, "="); strings.TrimSpace(pk) == k {
			return fmt.Errorf("key %s given twice", k)
		}
	}
	v.texts = append(v.texts, s)
	return nil
}

// TypeName names the value in --help (printFlags): as the flag package
// names an int or a string flag's, and "value" for a repeated pair.
func (v *fieldFlag) TypeName() string {
	switch {
	case v.field.Repeats():
		return "value"
	case v.field.Numeric() && !v.field.Seconds:
		return "int"
	}
	return "string"
}
