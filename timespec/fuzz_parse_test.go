package timespec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// FuzzNext (spec_fuzz_test.go) checks Next's answers for cron expressions
// built from valid pieces. The targets here feed the parsers arbitrary text
// instead — what an API client or an operator can type — and check that they
// never panic or hang, that every rejection is a field-level message, and
// that whatever they accept behaves. Run one for longer with e.g.
//
//	go test ./timespec -run '^$' -fuzz '^FuzzParseDuration$' -fuzztime 60s

// maxInterval is ParseDuration's documented ceiling (100 × 365 days).
const maxInterval = 100 * 365 * 24 * time.Hour

// FuzzParseDuration: any accepted duration is whole seconds in
// [0, 100 years], and its canonical ISO-8601 form parses back to itself.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{
		"PT1H", "P1D", "P1W", "PT1M30S", "P1DT2H", "P2W3D", "PT0S", "PT1.5H", "pt15m", "  PT5M ", "P1M", "P1Y", "PT1M",
		"-PT1S", "PT0.5S", "P", "PT", "PT1H1H", "P1DT", "P36500D", "P36501D", "P5214W", "P99999999999999999999W",
		"PT9223372036S", "PT0.0000000001S", "P0.5D", "P1.0000001W",
		"30 minutes", "1 hour", "1 hour 30 minutes", "1 hour and 30 minutes", "1 day, 2 hours", "2 weeks", "1h30m",
		"45s", "2d", "-5m", "1 month", "3 years", "1 fortnight", "1.5 hours", "0.5 seconds", "1e9h", "9999999999h",
		"٣ minutes", "１ hour", "1 hour and", "and 1 hour", "1 hour,", "1\u00a0hour", "", " ", "P\x00T1H", "1h\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := timespec.ParseDuration(s)
		if err != nil {
			if err.Error() == "" || (strings.Contains(err.Error(), "%!") && !strings.Contains(s, "%!")) {
				t.Fatalf("ParseDuration(%q): unusable error %q", s, err)
			}
			return
		}
		if d < 0 || d%time.Second != 0 || d > maxInterval {
			t.Fatalf("ParseDuration(%q) = %v: want whole seconds in [0, 100 years]", s, d)
		}
		iso := timespec.FormatISODuration(d)
		back, err := timespec.ParseDuration(iso)
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v, formatted %q, which parses to %v (%v)", s, d, iso, back, err)
		}
	})
}

// FuzzCompileSpec compiles a spec made of one arbitrary cron expression
// and/or one arbitrary interval in an arbitrary zone. A rejection must be a
// *timespec.Error with a message per field; an accepted spec must describe
// itself and fire strictly later, in whole seconds, with previews that
// ascend, and an interval alone must fire at epoch + offset + k·every,
// within one period.
func FuzzCompileSpec(f *testing.F) {
	type seed struct {
		cron, every, offset, zone string
		at                        int64
	}
	for _, s := range []seed{
		{"* * * * *", "", "", "", 1_784_203_200},
		{"*/15 9-17 * * 1-5", "", "", "Europe/London", 1_774_746_000},
		{"30 2 * * *", "", "", "America/New_York", 1_772_953_200},
		{"0 0 L * *", "", "", "Australia/Lord_Howe", 1_775_300_000},
		{"0 0 15W * *", "", "", "Asia/Kathmandu", 0},
		{"0 9 * * 5L", "PT1H", "PT5M", "UTC", -1},
		{"0 9 * * 6#2", "", "", "Pacific/Chatham", 4_102_444_800},
		{"@daily", "", "", "UTC", 253_402_300_000},
		{"@every 5m", "", "", "", 0},
		{"@reboot", "", "", "", 0},
		{"0 0 30 2 *", "", "", "", 0},
		{"61 * * * *", "", "", "", 0},
		{"0 0 * * * *", "", "", "", 0},
		{"*/0 * * * *", "", "", "", 0},
		{"1-60/7 * * * *", "", "", "", 0},
		{"0 2 * * SUN", "", "", "Local", 0},
		{"0 12 * JAN,jul *", "", "", "Mars/Olympus", 0},
		{"", "PT1S", "", "", 1_784_203_200},
		{"", "P1W", "P6DT23H59M59S", "", -62_135_596_800},
		{"", "PT1H", "PT1H", "", 0},
		{"", "P1M", "", "", 0},
		{"", "1 hour", "", "", 0},
		{"", "P36500D", "P36499D", "", 253_402_300_799},
		{"", "P36500D", "", "", 253_370_764_800},
		{"", "", "", "", 0},
		{"5 4 * * *", "PT7M", "PT3M", "../../etc/passwd", 1},
		{"0 0 29 2 1", "", "", "America/Santiago", 1_900_000_000},
		{"* * * * *\x00", "PT1M\u200b", "", "UTC\n", 0},
	} {
		f.Add(s.cron, s.every, s.offset, s.zone, s.at)
	}
	f.Fuzz(func(t *testing.T, cron, every, offset, zone string, at int64) {
		spec := models.Spec{Timezone: zone}
		if cron != "" {
			spec.CronExpressions = []string{cron}
		}
		if every != "" || offset != "" {
			spec.Intervals = []models.Interval{{Every: every, Offset: offset}}
		}
		compiled, err := timespec.Compile(spec)
		if err != nil {
			var verr *timespec.Error
			if !errors.As(err, &verr) || len(verr.Fields) == 0 {
				t.Fatalf("Compile(%+v): %v is not an *Error with fields", spec, err)
			}
			for field, msg := range verr.Fields {
				if msg == "" || (strings.Contains(msg, "%!") && !strings.Contains(cron+every+offset+zone, "%!")) {
					t.Fatalf("Compile(%+v): field %s has message %q", spec, field, msg)
				}
			}
			return
		}
		if compiled.Description() == "" {
			t.Fatalf("Compile(%+v): empty description", spec)
		}
		// Instants from year 1 to 9999, where Next works.
		const lo, hi = -62_135_596_800, 253_402_300_799
		after := time.Unix(lo+((at%(hi-lo))+(hi-lo))%(hi-lo), 0).UTC()
		next, ok := compiled.Next(after)
		preview := compiled.Preview(after, 5)
		if !ok {
			if len(preview) != 0 {
				t.Fatalf("%+v after %s: Next says never, Preview lists %v", spec, after, preview)
			}
			return
		}
		if next.Year() > 9999 {
			t.Fatalf("%+v: Next(%s) = %s is after year 9999, which has no RFC 3339 form", spec, after, next)
		}
		if !next.After(after) || next.Nanosecond() != 0 || next.Location() != time.UTC {
			t.Fatalf("%+v: Next(%s) = %s: want a later whole second in UTC", spec, after, next)
		}
		if len(preview) == 0 || !preview[0].Equal(next) {
			t.Fatalf("%+v after %s: Preview %v does not start at Next %s", spec, after, preview, next)
		}
		for i := 1; i < len(preview); i++ {
			if !preview[i].After(preview[i-1]) {
				t.Fatalf("%+v after %s: Preview does not ascend: %v", spec, after, preview)
			}
		}
		if cron == "" {
			e, _ := timespec.ParseDuration(every)
			o, _ := timespec.ParseDuration(offset)
			if strings.TrimSpace(offset) == "" {
				o = 0
			}
			es, ofs := int64(e/time.Second), int64(o/time.Second)
			if gap := next.Sub(after); gap > e {
				t.Fatalf("%+v: Next(%s) = %s is %s away, more than one period", spec, after, next, gap)
			}
			if ((next.Unix()-ofs)%es+es)%es != 0 {
				t.Fatalf("%+v: Next(%s) = %s is not epoch + offset + k·every", spec, after, next)
			}
		}
	})
}
