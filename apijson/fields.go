package apijson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// The schedule's own fields (scheduling.Fields) have typed members in
// Schedule, CreateSchedule and SchedulePatch — the Go client's view of
// them — and nothing else here: what goes into and out of those members
// is derived from the field table by JSON key. A field's member in
// Schedule has the field's Go type, and FromSchedule sets it from the
// schedule; CreateSchedule.Input and SchedulePatch.Input read the
// documents they are sent as through the table (scheduling.DecodePatch).

// scheduleMembers are the indexes, in Schedule, of the members the field
// table's simple fields go to, checked once: a member of another type
// than its field's is a programming error caught by every test.
var scheduleMembers = func() []member {
	var out []member
	byKey := jsonMembers(reflect.TypeFor[Schedule]())
	for _, f := range scheduling.Fields {
		if !f.Simple() {
			continue
		}
		m, ok := byKey[f.Key]
		if !ok {
			panic(fmt.Sprintf("apijson.Schedule has no member for the field %q", f.Key))
		}
		if want := reflect.TypeOf(f.Value(scheduling.Blank())); want != nil && m.typ != want {
			panic(fmt.Sprintf("apijson.Schedule.%s is %s; the field %q is %s", m.name, m.typ, f.Key, want))
		}
		m.field = f
		out = append(out, m)
	}
	return out
}()

type member struct {
	name  string
	index []int
	typ   reflect.Type
	field scheduling.Field
}

// jsonMembers are t's members by JSON key.
func jsonMembers(t reflect.Type) map[string]member {
	out := map[string]member{}
	for i := range t.NumField() {
		sf := t.Field(i)
		key, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if key != "" && key != "-" {
			out[key] = member{name: sf.Name, index: sf.Index, typ: sf.Type}
		}
	}
	return out
}

// setFields sets out's members of the field table's fields from s.
func setFields(out *Schedule, s *models.Schedule) {
	v := reflect.ValueOf(out).Elem()
	for _, m := range scheduleMembers {
		value := reflect.ValueOf(m.field.Value(s))
		if !value.IsValid() {
			continue // a nil interface: the member's zero value
		}
		v.FieldByIndex(m.index).Set(value)
	}
}

// BodyOf is doc's JSON body by key, each value as it is sent.
func BodyOf(doc any) (map[string]json.RawMessage, error) {
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return raw, nil
}

// fieldsOf reads the field table's simple fields from doc's JSON body:
// the fields the body sets, as an update.
func fieldsOf(doc any) (scheduling.UpdateInput, error) {
	raw, err := BodyOf(doc)
	if err != nil {
		return scheduling.UpdateInput{}, err
	}
	simple := make(map[string]json.RawMessage, len(raw))
	for key, value := range raw {
		if f, ok := scheduling.FieldByKey(key); ok && f.Simple() {
			simple[key] = value
		}
	}
	return scheduling.DecodePatch(simple)
}
