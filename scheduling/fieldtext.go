package scheduling

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/tidelinehq/tideline/models"
)

// A field's text form is how a person types its value: the console's input
// and the CLI's flag. It follows from the field's Go type — a whole number,
// a line of text, or key=value lines — so a new field of one of these types
// needs nothing here, and every form reads and prints it the same way.

type textKind int

const (
	textNumber textKind = iota // a whole number
	textLine                   // one line of text, trimmed
	textPairs                  // key=value, one per line
)

type textForm struct{ kind textKind }

// textFormOf is the text form of a field held as T (or *T).
func textFormOf[T any]() *textForm {
	switch k := reflect.TypeFor[T]().Kind(); k {
	case reflect.Int, reflect.Int64:
		return &textForm{textNumber}
	case reflect.String:
		return &textForm{textLine}
	case reflect.Map:
		return &textForm{textPairs}
	default:
		panic(fmt.Sprintf("a schedule field held as %s has no text form", k))
	}
}

// parse reads text into the field's JSON value; an empty text is the
// field's empty value. problems say what could not be read.
func (t textForm) parse(text string, empty json.RawMessage) (json.RawMessage, []string) {
	if t.kind != textPairs {
		text = strings.TrimSpace(text)
	}
	if text == "" {
		return empty, nil
	}
	switch t.kind {
	case textNumber:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, []string{"must be a whole number"}
		}
		return json.RawMessage(strconv.FormatInt(n, 10)), nil
	case textPairs:
		m, problems := ParsePairLines(text)
		return mustJSON(m), problems
	default:
		return mustJSON(text), nil
	}
}

// print spells a field's JSON value (encode's) as its text form.
func (t textForm) print(raw json.RawMessage) string {
	if string(raw) == "null" {
		return ""
	}
	switch t.kind {
	case textLine:
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	case textPairs:
		var m map[string]string
		_ = json.Unmarshal(raw, &m)
		return PairLines(m)
	default:
		return string(raw)
	}
}

// HasText reports whether the field has a text form (all but spec and
// action, whose parts have inputs of their own).
func (f Field) HasText() bool { return f.form != nil }

// Text is the field's value on s in its text form.
func (f Field) Text(s *models.Schedule) string { return f.form.print(f.encode(s)) }

// TextsOf are the text forms of every field that has one, by key: the
// console's form prefilled from s.
func TextsOf(s *models.Schedule) map[string]string {
	out := make(map[string]string, len(Fields))
	for _, f := range Fields {
		if f.form != nil {
			out[f.Key] = f.Text(s)
		}
	}
	return out
}

// ParseTexts reads fields given in their text forms, by key (the
// console's form, the CLI's flags), into the update that sets them; an
// empty text sets the field's empty value (null, 0, "", {} or its
// default). What cannot be read is listed by key in problems (several per
// key, one a line) and left out of the update; the service judges the rest.
// A key without a text form is a programming error and panics.
func ParseTexts(texts map[string]string) (in UpdateInput, problems map[string][]string) {
	for key, text := range texts {
		f, ok := FieldByKey(key)
		if !ok || f.form == nil {
			panic(fmt.Sprintf("ParseTexts: %q is no field with a text form", key))
		}
		raw, bad := f.form.parse(text, f.empty)
		if len(bad) == 0 {
			if err := f.decode(raw, &in); err != nil {
				bad = []string{"must be a whole number"} // beyond the field's type
			}
		}
		if len(bad) > 0 {
			if problems == nil {
				problems = map[string][]string{}
			}
			problems[key] = bad
		}
	}
	return in, problems
}

// ParsePairLines reads "key=value" lines (blank lines skipped, both sides
// trimmed); problems name the line of each one that is not a pair or
// repeats a key.
func ParsePairLines(text string) (map[string]string, []string) {
	m := map[string]string{}
	var problems []string
	for i, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		switch _, dup := m[k]; {
		case !ok || k == "":
			problems = append(problems, fmt.Sprintf("line %d: write key=value", i+1))
		case dup:
			problems = append(problems, fmt.Sprintf("line %d: key %q appears twice", i+1, k))
		default:
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, problems
}

// PairLines spells a map as ParsePairLines reads it, sorted by key.
func PairLines(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + m[k]
	}
	return strings.Join(lines, "\n")
}

// take sets on in every field that defs sets.
func (in *UpdateInput) take(defs UpdateInput) {
	for _, f := range Fields {
		f.take(&defs, in)
	}
}

// Draft writes the fields in sets onto s as an update would, unvalidated:
// the console's form as a schedule, for its "what will change".
func Draft(s *models.Schedule, in UpdateInput) {
	u := &applying{sch: s, in: &in}
	for _, f := range Fields {
		if f.form != nil {
			f.apply(u)
		}
	}
}

// Blank is a schedule whose fields hold what a definition that leaves
// them all out has: the new-schedule form's prefill.
func Blank() *models.Schedule {
	s := &models.Schedule{}
	for _, f := range Fields {
		if f.load != nil && f.empty != nil {
			if err := f.load(f.empty, s); err != nil {
				panic(fmt.Sprintf("the empty value of %s: %v", f.Key, err))
			}
		}
	}
	return s
}

// ParseText reads text, the field's text form, into its JSON value (an
// empty text is its empty value); problems say what could not be read.
func (f Field) ParseText(text string) (json.RawMessage, []string) { return f.form.parse(text, f.empty) }

// Repeats reports whether the field's text form is key=value lines,
// which a CLI flag takes one at a time.
func (f Field) Repeats() bool { return f.form != nil && f.form.kind == textPairs }

// Numeric reports whether the field's text form is a whole number.
func (f Field) Numeric() bool { return f.form != nil && f.form.kind == textNumber }
