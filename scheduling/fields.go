package scheduling

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// Fields is the one table of a schedule's top-level definition fields:
// each is declared here once — its JSON key, whether null clears it, how
// it is decoded, validated, read from and written to a schedule, and how
// a diff shows it. Every surface derives from it: PATCH decoding
// (DecodePatch, which the API, the console and the Go client's patches
// share), the update and Create (an update of a full definition onto a
// blank schedule), the diff (DiffFields, FieldValues), the console's edit
// form (FieldPatch, ConsoleParts), the CLI's --clear (ClearNames) and the
// nullable list of the wire (NullableKeys).
//
// The order is the display order: the console's edit form, then what only
// the API can set. ScheduleUpdated.changed_fields lists fields in it.
var Fields = []Field{
	specField,
	actionField,
	valueField("overlap_policy", func(in *UpdateInput) **string { return &in.OverlapPolicy },
		func(s *models.Schedule) *string { return &s.OverlapPolicy },
		func(v *ValidationError, p string) {
			if !validPolicy(p) {
				v.Add("overlap_policy", policyMessage())
			}
		}, nil, func(p string) string { return p }).recordedApart().defaultsTo(`"`+OverlapSkip+`"`).
		documented(`{"allOf":[{"$ref":"#/components/schemas/OverlapPolicy"}],"default":"skip"}`).
		flag("overlap", "overlap policy: skip, buffer_one, buffer_all, allow_all, cancel_other or terminate_other (default skip)"),
	valueField("jitter_seconds", func(in *UpdateInput) **int { return &in.JitterSeconds },
		func(s *models.Schedule) *int { return &s.JitterSeconds }, validateJitter, nil, strconv.Itoa).clearsTo("0").
		documented(`{"type":"integer","minimum":0,"maximum":3600,"default":0,
			"description":"Each computed next fire is delayed by a uniform random 0..jitter_seconds."}`).
		flag("jitter", `random delay added to each fire, up to this much: seconds or a duration ("30s", "PT1M")`).inSeconds(),
	maxRunsField,
	nullableField("pause_after_failures", func(in *UpdateInput) *Nullable[int] { return &in.PauseAfterFailures },
		func(s *models.Schedule) **int { return &s.PauseAfterFailures }, validatePauseAfterFailures, intText).
		documented(`{"type":"integer","minimum":1,"maximum":100,"description":"Pause the schedule (as the scheduler, within one
			loop period) after this many consecutive unsuccessful runs; null never does."}`).
		flag("pause-after-failures", "pause the schedule after this many consecutive failed runs (1-100)"),
	nullableField("catchup_window_seconds", func(in *UpdateInput) *Nullable[int] { return &in.CatchupWindowSeconds },
		func(s *models.Schedule) **int { return &s.CatchupWindowSeconds }, validateCatchupWindow, intText).
		documented(`{"type":"integer","minimum":1,"maximum":604800,"description":"Missed-fire policy (CONTRACT §12): after
			downtime, fire the occurrences of the last this many seconds in order (the overlap policy applies; at most 100 per
			schedule per tick) and count older ones in one ScheduleTriggerSkipped {reason: missed_occurrences}; null fires the
			overdue occurrence once and counts the rest."}`).
		flag("catchup-window", `after downtime, fire the occurrences of this last stretch in order: seconds or a duration ("2h"; at most 7 days)`).
		inSeconds(),
	nullableField("start_deadline_seconds", func(in *UpdateInput) *Nullable[int64] { return &in.StartDeadlineSeconds },
		func(s *models.Schedule) **int64 { return &s.StartDeadlineSeconds }, validateStartDeadline, int64Text).
		documented(`{"type":"integer","minimum":1,"maximum":604800,"description":"A run still `+"`pending`"+` this many
			seconds after its occurrence (backfilled, drained and manual runs: after their creation) is reported once as
			`+"`run_not_started`"+` (1-604800; null = off)."}`).
		flag("start-deadline", `notify run_not_started when a run is still pending this long after its occurrence: seconds or a duration ("15m")`).
		inSeconds(),
	nullableField("connection", func(in *UpdateInput) *Nullable[string] { return &in.Connection },
		func(s *models.Schedule) **string { return &s.Connection }, routeValidator("connection"), derefText).
		documented(routeSchema).flag("connection", "connection of the started runs (default: the workflow type's, then the global one)"),
	nullableField("queue", func(in *UpdateInput) *Nullable[string] { return &in.Queue },
		func(s *models.Schedule) **string { return &s.Queue }, routeValidator("queue"), derefText).
		documented(routeSchema).flag("queue", "queue of the started runs (default: the workflow type's, then the global one)"),
	mapField("labels", func(in *UpdateInput) **map[string]string { return &in.Labels },
		func(s *models.Schedule) *map[string]string { return &s.Labels },
		func(v *ValidationError, m map[string]string) { validateStringMap(v, "labels", m) }).
		documented(`{"$ref":"#/components/schemas/LabelMap"}`).
		flag("label", "label key=value (repeatable; replaces the labels; filter with list --label key=value)"),
	mapField("memo", func(in *UpdateInput) **map[string]string { return &in.Memo },
		func(s *models.Schedule) *map[string]string { return &s.Memo }, validateMemo).
		documented(`{"$ref":"#/components/schemas/Memo"}`).
		flag("memo", "memo entry key=value, shown with the schedule (repeatable; replaces the memo)"),
	mapField("search_attributes", func(in *UpdateInput) **map[string]string { return &in.SearchAttributes },
		func(s *models.Schedule) *map[string]string { return &s.SearchAttributes },
		func(v *ValidationError, m map[string]string) { validateStringMap(v, "search_attributes", m) }).apiOnly().
		documented(`{"$ref":"#/components/schemas/LabelMap"}`).
		flag("search-attribute", "search attribute key=value (repeatable; replaces the search attributes)"),
	valueField("note", func(in *UpdateInput) **string { return &in.Note },
		func(s *models.Schedule) *string { return &s.Note }, validateNote, nil, func(n string) string { return n }).clearsTo(`""`).
		documented(`{"type":"string","maxLength":4096,"description":"Free text shown with the schedule."}`).
		flag("note", "free-text note shown with the schedule"),
}

// routeSchema documents connection and queue.
const routeSchema = `{"type":"string","minLength":1,"maxLength":255,
	"description":"Routing override; null uses the workflow type's default, then the global one."}`

// The inputs of Create and Update hold each field in a slot of its own,
// here beside the table, so a field is declared in this file only.

// Nullable is an update of a field that may be set to null: Set says the
// caller gave the field at all, Value nil means "clear it".
type Nullable[T any] struct {
	Set   bool
	Value *T
}

// UpdateInput is a partial update: nil pointers (and unset Nullables) leave
// their field alone; Spec and Action replace the whole object when given.
type UpdateInput struct {
	Spec                 *models.Spec
	Action               *models.Action
	OverlapPolicy        *string
	JitterSeconds        *int
	MaxRuns              Nullable[int64]
	Connection           Nullable[string]
	Queue                Nullable[string]
	Labels               *map[string]string
	Memo                 *map[string]string
	SearchAttributes     *map[string]string
	Note                 *string
	PauseAfterFailures   Nullable[int]
	CatchupWindowSeconds Nullable[int]
	// StartDeadlineSeconds applies to runs started after the change.
	StartDeadlineSeconds Nullable[int64]
}

// CreateInput is everything a new schedule may be given.
type CreateInput struct {
	Namespace        string
	ScheduleID       string // generated "sch-<ulid>" when empty
	Spec             models.Spec
	Action           models.Action
	OverlapPolicy    string // default skip
	JitterSeconds    int
	MaxRuns          *int64
	Connection       *string
	Queue            *string
	Labels           map[string]string
	Memo             map[string]string
	SearchAttributes map[string]string
	Note             string
	Paused           bool
	// PauseAfterFailures pauses the schedule after that many consecutive
	// unsuccessful runs (1-100); nil never does.
	PauseAfterFailures *int
	// CatchupWindowSeconds is the missed-fire policy; nil is Part I's rule.
	CatchupWindowSeconds *int
	// StartDeadlineSeconds reports a run still pending that long after its
	// occurrence (run_not_started); nil never does.
	StartDeadlineSeconds *int64
	// Fields sets definition fields as an update does, over the slots
	// above: a definition read field by field through the table (a create
	// document, DecodePatch; the console's form, ParseTexts).
	Fields UpdateInput
}

// definition is in's fields as an update of every one of them (define
// applies it to a blank schedule); the overlap policy defaults to skip.
func (in CreateInput) definition() UpdateInput {
	if in.OverlapPolicy == "" {
		in.OverlapPolicy = OverlapSkip
	}
	def := UpdateInput{Spec: &in.Spec, Action: &in.Action, OverlapPolicy: &in.OverlapPolicy,
		JitterSeconds: &in.JitterSeconds, MaxRuns: Nullable[int64]{Set: true, Value: in.MaxRuns},
		Connection: Nullable[string]{Set: true, Value: in.Connection}, Queue: Nullable[string]{Set: true, Value: in.Queue},
		Labels: &in.Labels, Memo: &in.Memo, SearchAttributes: &in.SearchAttributes, Note: &in.Note,
		PauseAfterFailures:   Nullable[int]{Set: true, Value: in.PauseAfterFailures},
		CatchupWindowSeconds: Nullable[int]{Set: true, Value: in.CatchupWindowSeconds},
		StartDeadlineSeconds: Nullable[int64]{Set: true, Value: in.StartDeadlineSeconds}}
	def.take(in.Fields)
	return def
}

// Field is one top-level field of a schedule definition (see Fields).
type Field struct {
	// Key is the field's JSON key in the schedule, create, PATCH and
	// apply documents, and its name in changed_fields.
	Key string
	// Nullable fields are cleared by an explicit null (PATCH, --clear);
	// null is refused for the others.
	Nullable bool
	// Parts are the names the diff shows the field under, in order: the
	// key itself, or the parts of spec and action.
	Parts []string
	// Console marks a field the console's edit form has inputs for.
	Console bool
	// ClearJSON is the value `schedule update --clear KEY` sends for a
	// field that is not nullable ("" when it has none).
	ClearJSON string
	// Schema is the field's JSON Schema in the create request (OpenAPI
	// 3.0, its description included; nullable follows Nullable): the
	// served document derives the field's entries in the create and
	// update requests and in the schedule from it (web/openapi.go).
	Schema json.RawMessage
	// Flag is the field's flag in `schedule add` and `schedule update`
	// ("" for none) and Usage its help. The flag's value is the field's
	// text form, as the console reads its input; a map's flag repeats, one
	// key=value each, and a field in Seconds also takes a duration there.
	Flag, Usage string
	Seconds     bool

	decode func(raw json.RawMessage, in *UpdateInput) error
	// encode and load are the field's JSON value (as the API shows it and
	// a version records it under "settings"), from and into a schedule;
	// nil for spec and action, whose wire shapes are apijson's.
	encode func(s *models.Schedule) json.RawMessage
	load   func(raw json.RawMessage, s *models.Schedule) error
	// value is the field's value on a schedule, as its Go type (the
	// wire's typed members take it as it is; see apijson.FromSchedule).
	value func(s *models.Schedule) any
	// apart marks a field the version events carry under a key of their
	// own rather than in Settings (overlap_policy).
	apart bool
	// empty is the JSON value of a definition that leaves the field out:
	// null for a nullable field, else its default.
	empty json.RawMessage
	// form is the field's text form (fieldtext.go): the console's input
	// and the CLI's flag value. nil for spec and action, whose parts
	// have inputs of their own.
	form  *textForm
	given func(in *UpdateInput) bool
	take  func(from, to *UpdateInput)
	copy  func(from *models.Schedule, in *UpdateInput)
	check func(u *applying)
	apply func(u *applying) bool
	texts func(s *models.Schedule, out map[string]string)
}

// applying is one update in progress: the schedule, the input, the field
// errors so far and the spec compiled by its check.
type applying struct {
	svc      *Service // the target rules depend on serve's flags
	sch      *models.Schedule
	in       *UpdateInput
	v        *ValidationError
	compiled *timespec.CompiledSpec
	cals     []*timespec.Calendar // what spec.exclude_calendars may name
}

func (f Field) clearsTo(value string) Field {
	f.ClearJSON, f.empty = value, json.RawMessage(value)
	return f
}
func (f Field) apiOnly() Field { f.Console = false; return f }

// flag gives the field's CLI flag and its help (Flag, Usage).
func (f Field) flag(name, usage string) Field { f.Flag, f.Usage = name, usage; return f }

// inSeconds marks a number of seconds, which the CLI also takes as a
// duration ("90s", "PT1H").
func (f Field) inSeconds() Field { f.Seconds = true; return f }

// documented gives the field's JSON Schema (Schema), written across
// lines: every run of white space is one space (descriptions included).
func (f Field) documented(schema string) Field {
	f.Schema = json.RawMessage(strings.Join(strings.Fields(schema), " "))
	return f
}

// recordedApart leaves a field out of Settings: the version events carry
// it under its own key.
func (f Field) recordedApart() Field { f.apart = true; return f }

// defaultsTo is the value a definition that leaves the field out has.
func (f Field) defaultsTo(value string) Field { f.empty = json.RawMessage(value); return f }

// recorded reports whether versions record the field under "settings".
func (f Field) recorded() bool { return f.encode != nil && !f.apart }

// mustJSON encodes a field's value: ints, strings and string maps, which
// encoding/json cannot fail on.
func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode a schedule field: %v", err))
	}
	return raw
}

// Simple reports whether the field is one value of its own (all but spec
// and action, whose wire shapes are objects of their own).
func (f Field) Simple() bool { return f.value != nil }

// Empty is the field's value in a definition that leaves it out: null
// for a nullable field, else its default.
func (f Field) Empty() json.RawMessage { return f.empty }

// Value is the field's value on s, as the field's Go type (*int, string,
// map[string]string…).
func (f Field) Value(s *models.Schedule) any { return f.value(s) }

// FieldByKey returns the field of key.
func FieldByKey(key string) (Field, bool) {
	for _, f := range Fields {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// NullableKeys are the keys of the fields an explicit null clears.
func NullableKeys() []string {
	var out []string
	for _, f := range Fields {
		if f.Nullable {
			out = append(out, f.Key)
		}
	}
	return out
}

// FieldKeys are the keys of every field, in table order.
func FieldKeys() []string {
	out := make([]string, len(Fields))
	for i, f := range Fields {
		out[i] = f.Key
	}
	return out
}

// ConsoleParts are the diff parts the console's edit form has inputs for,
// in form order, with the field each belongs to.
func ConsoleParts() []FieldPart {
	var out []FieldPart
	for _, f := range Fields {
		if f.Console {
			for _, p := range f.Parts {
				out = append(out, FieldPart{Part: p, Field: f.Key})
			}
		}
	}
	return out
}

// FieldPart is one diff part and the field it belongs to.
type FieldPart struct{ Part, Field string }

// Given reports whether in sets this field.
func (f Field) Given(in UpdateInput) bool { return f.given(&in) }

// FieldDecodeError is a PATCH value that is not JSON of the field's type
// (the API answers 400 invalid_json with Err described).
type FieldDecodeError struct {
	Key string
	Err error
}

func (e *FieldDecodeError) Error() string { return fmt.Sprintf("decode field %q: %v", e.Key, e.Err) }
func (e *FieldDecodeError) Unwrap() error { return e.Err }

// UnknownFieldError is a PATCH key no field has.
type UnknownFieldError struct{ Key string }

func (e *UnknownFieldError) Error() string { return fmt.Sprintf("unknown field %q", e.Key) }

// DecodePatch reads a PATCH document field by field, so that an absent
// field and an explicit null differ: null clears a nullable field and is
// refused (a 422 naming the field) for the others.
func DecodePatch(raw map[string]json.RawMessage) (UpdateInput, error) {
	var in UpdateInput
	for key, value := range raw {
		f, ok := FieldByKey(key)
		if !ok {
			return in, &UnknownFieldError{Key: key}
		}
		if string(value) == "null" && !f.Nullable {
			return in, NewValidationError(key, "cannot be null; leave the field out to keep it")
		}
		if err := f.decode(value, &in); err != nil {
			return in, &FieldDecodeError{Key: key, Err: err}
		}
	}
	return in, nil
}

// FieldPatch is the update that sets the fields named by keys to their
// values in from (the console's edit form: the fields whose parts
// changed).
func FieldPatch(from *models.Schedule, keys []string) UpdateInput {
	var in UpdateInput
	for _, f := range Fields {
		for _, k := range keys {
			if k == f.Key {
				f.copy(from, &in)
				break
			}
		}
	}
	return in
}

// definitionOf is every field of from as an update: applied to a blank
// schedule, it makes one with from's definition.
func definitionOf(from *models.Schedule) UpdateInput {
	var in UpdateInput
	for _, f := range Fields {
		f.copy(from, &in)
	}
	return in
}

// strictJSON decodes data into dst, refusing keys dst has no field for.
func strictJSON(data []byte, dst any) error {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	return dec.Decode(dst)
}

// valueField is a field that always has a value (null is refused): slot is
// where an update holds it (nil: not given), at where a schedule does.
func valueField[T any](key string, slot func(*UpdateInput) **T, at func(*models.Schedule) *T,
	validate func(*ValidationError, T), normalize func(T) T, text func(T) string) Field {
	norm := func(v T) T {
		if normalize != nil {
			return normalize(v)
		}
		return v
	}
	return Field{Key: key, Parts: []string{key}, Console: true,
		decode: func(raw json.RawMessage, in *UpdateInput) error { return strictJSON(raw, slot(in)) },
		encode: func(s *models.Schedule) json.RawMessage { return mustJSON(norm(*at(s))) },
		value:  func(s *models.Schedule) any { return *at(s) },
		load: func(raw json.RawMessage, s *models.Schedule) error {
			var v T
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			*at(s) = norm(v)
			return nil
		},
		form:  textFormOf[T](),
		given: func(in *UpdateInput) bool { return *slot(in) != nil },
		take: func(from, to *UpdateInput) {
			if p := *slot(from); p != nil {
				*slot(to) = p
			}
		},
		copy: func(from *models.Schedule, in *UpdateInput) {
			v := *at(from)
			*slot(in) = &v
		},
		check: func(u *applying) {
			if p := *slot(u.in); p != nil {
				validate(u.v, *p)
			}
		},
		apply: func(u *applying) bool {
			p := *slot(u.in)
			if p == nil {
				return false
			}
			v := norm(*p)
			if reflect.DeepEqual(*at(u.sch), v) {
				return false
			}
			*at(u.sch) = v
			return true
		},
		texts: func(s *models.Schedule, out map[string]string) { out[key] = text(*at(s)) },
	}
}

// nullableField is a field an explicit null clears.
func nullableField[T any](key string, slot func(*UpdateInput) *Nullable[T], at func(*models.Schedule) **T,
	validate func(*ValidationError, *T), text func(*T) string) Field {
	return Field{Key: key, Nullable: true, Parts: []string{key}, Console: true,
		decode: func(raw json.RawMessage, in *UpdateInput) error {
			n := slot(in)
			n.Set = true
			return strictJSON(raw, &n.Value)
		},
		encode: func(s *models.Schedule) json.RawMessage { return mustJSON(*at(s)) },
		value:  func(s *models.Schedule) any { return *at(s) },
		load: func(raw json.RawMessage, s *models.Schedule) error {
			var v *T
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			*at(s) = v
			return nil
		},
		empty: json.RawMessage("null"),
		form:  textFormOf[T](),
		given: func(in *UpdateInput) bool { return slot(in).Set },
		take: func(from, to *UpdateInput) {
			if n := *slot(from); n.Set {
				*slot(to) = n
			}
		},
		copy: func(from *models.Schedule, in *UpdateInput) {
			*slot(in) = Nullable[T]{Set: true, Value: *at(from)}
		},
		check: func(u *applying) {
			if n := slot(u.in); n.Set {
				validate(u.v, n.Value)
			}
		},
		apply: func(u *applying) bool {
			n := slot(u.in)
			if !n.Set || reflect.DeepEqual(*at(u.sch), n.Value) {
				return false
			}
			*at(u.sch) = n.Value
			return true
		},
		texts: func(s *models.Schedule, out map[string]string) { out[key] = text(*at(s)) },
	}
}

// mapField is a string map; absent is stored as {}.
func mapField(key string, slot func(*UpdateInput) **map[string]string, at func(*models.Schedule) *map[string]string,
	validate func(*ValidationError, map[string]string)) Field {
	return valueField(key, slot, at, validate, nonNilMap, pairsText).clearsTo("{}")
}

func routeValidator(field string) func(*ValidationError, *string) {
	return func(v *ValidationError, value *string) { validateRoute(v, field, value) }
}

// maxRunsField: a new limit must exceed the runs already started, and
// the remaining budget follows it.
var maxRunsField = func() Field {
	f := nullableField("max_runs", func(in *UpdateInput) *Nullable[int64] { return &in.MaxRuns },
		func(s *models.Schedule) **int64 { return &s.MaxRuns }, validateMaxRuns, int64Text).
		documented(`{"type":"integer","format":"int64","minimum":1,"description":"The schedule is deleted (reason
			max_runs_exhausted) after this many started runs; null for no limit."}`).
		flag("max-runs", "delete the schedule after this many runs in all (default unlimited; on update, more than the runs already started)")
	check, apply := f.check, f.apply
	f.check = func(u *applying) {
		check(u)
		if m := u.in.MaxRuns.Value; u.in.MaxRuns.Set && m != nil && *m >= 1 && *m <= u.sch.FiresCount {
			u.v.Add("max_runs", fmt.Sprintf("must exceed the %d runs already started", u.sch.FiresCount))
		}
	}
	f.apply = func(u *applying) bool {
		if !apply(u) {
			return false
		}
		u.sch.RemainingActions = nil
		if m := u.sch.MaxRuns; m != nil {
			remaining := *m - u.sch.FiresCount
			u.sch.RemainingActions = &remaining
		}
		return true
	}
	return f
}()

// specField is replaced whole; its timezone defaults to UTC, and its
// check compiles it (the compiled spec times the next fire).
var specField = Field{Key: "spec", Parts: []string{"cron_expressions", "intervals", "timezone", "start_at", "end_at", "at", "exclude_calendars", "on_excluded"}, Console: true,
	decode: func(raw json.RawMessage, in *UpdateInput) error { return strictJSON(raw, &in.Spec) },
	given:  func(in *UpdateInput) bool { return in.Spec != nil },
	take: func(from, to *UpdateInput) {
		if from.Spec != nil {
			to.Spec = from.Spec
		}
	},
	copy: func(from *models.Schedule, in *UpdateInput) {
		spec := from.Spec
		in.Spec = &spec
	},
	check: func(u *applying) {
		if u.in.Spec == nil {
			return
		}
		if u.in.Spec.Timezone == "" {
			spec := *u.in.Spec
			spec.Timezone = "UTC"
			u.in.Spec = &spec
		}
		u.compiled = compileField(u.v, *u.in.Spec, u.cals...)
	},
	apply: func(u *applying) bool {
		if u.in.Spec == nil {
			return false
		}
		spec := normalizeSpec(*u.in.Spec)
		if sameJSON(u.sch.Spec, spec) {
			return false
		}
		u.sch.Spec = spec
		return true
	},
	texts: func(s *models.Schedule, out map[string]string) {
		ivs := make([]string, 0, len(s.Spec.Intervals))
		for _, iv := range s.Spec.Intervals {
			ivs = append(ivs, strings.TrimSpace(iv.Every+" "+iv.Offset))
		}
		tz := s.Spec.Timezone
		if tz == "" {
			tz = "UTC"
		}
		out["cron_expressions"], out["intervals"], out["timezone"] = strings.Join(s.Spec.CronExpressions, ", "), strings.Join(ivs, ", "), tz
		out["start_at"], out["end_at"], out["at"] = s.Spec.StartAt, s.Spec.EndAt, strings.Join(s.Spec.At, ", ")
		out["exclude_calendars"], out["on_excluded"] = strings.Join(s.Spec.ExcludeCalendars, ", "), ""
		if len(s.Spec.ExcludeCalendars) > 0 {
			out["on_excluded"] = cmp.Or(s.Spec.OnExcluded, "skip")
		}
	},
}

// actionField is replaced whole; its retry policy takes its defaults.
var actionField = Field{Key: "action", Console: true,
	Parts:  []string{"workflow_type", "workflow_class", "input", "execution_timeout_seconds", "run_timeout_seconds", "retry_policy", "target"},
	decode: func(raw json.RawMessage, in *UpdateInput) error { return strictJSON(raw, &in.Action) },
	given:  func(in *UpdateInput) bool { return in.Action != nil },
	take: func(from, to *UpdateInput) {
		if from.Action != nil {
			to.Action = from.Action
		}
	},
	copy: func(from *models.Schedule, in *UpdateInput) {
		action := from.Action
		in.Action = &action
	},
	check: func(u *applying) {
		if u.in.Action == nil {
			return
		}
		action := *u.in.Action
		action.RetryPolicy = normalizeRetryPolicy(action.RetryPolicy)
		action.Target = normalizeTarget(action.Target)
		u.in.Action = &action
		validateAction(u.v, action)
		// The stored target is the blank schedule's none on create.
		u.svc.checkTarget(u.v, action.Target, u.sch.Action.Target)
	},
	apply: func(u *applying) bool {
		if u.in.Action == nil || sameJSON(u.sch.Action, *u.in.Action) {
			return false
		}
		u.sch.Action = *u.in.Action
		return true
	},
	texts: func(s *models.Schedule, out map[string]string) {
		input := ""
		if len(s.Action.Input) > 0 {
			// Through `any` and back, as Update compares (1 == 1.0; key order).
			input = string(s.Action.Input)
			var doc any
			if json.Unmarshal(s.Action.Input, &doc) == nil {
				if raw, err := json.Marshal(doc); err == nil {
					input = string(raw)
				}
			}
		}
		out["workflow_type"], out["workflow_class"], out["input"] = s.Action.WorkflowType, s.Action.WorkflowClass, input
		out["execution_timeout_seconds"], out["run_timeout_seconds"] = int64Text(s.Action.ExecutionTimeoutSeconds), int64Text(s.Action.RunTimeoutSeconds)
		out["retry_policy"], out["target"] = retryPolicyText(s.Action.RetryPolicy), TargetText(s.Action.Target)
	},
}
