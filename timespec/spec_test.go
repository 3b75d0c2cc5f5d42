package timespec

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

func TestCompileValidationErrors(t *testing.T) {
	t.Parallel()
	every := func(e, o string) []models.Interval { return []models.Interval{{Every: e, Offset: o}} }
	tests := []struct {
		name     string
		spec     models.Spec
		code     string
		field    string
		contains string // the whole message when exact is set
		exact    bool
	}{
		{"empty spec", models.Spec{}, "validation_failed", "cron_expressions",
			"add at least one cron expression, interval or at time", true},
		{"six fields", models.Spec{CronExpressions: []string{"0 0 * * * *"}}, "validation_failed", "cron_expressions[0]",
			`"0 0 * * * *" has 6 fields; Tideline accepts standard 5-field cron (minute hour day-of-month month day-of-week)`, true},
		{"seven fields", models.Spec{CronExpressions: []string{"0 0 0 * * * 2026"}}, "validation_failed", "cron_expressions[0]",
			`"0 0 0 * * * 2026" has 7 fields`, false},
		{"four fields", models.Spec{CronExpressions: []string{"0 0 * *"}}, "validation_failed", "cron_expressions[0]",
			`"0 0 * *" has 4 fields`, false},
		{"empty expression", models.Spec{CronExpressions: []string{"  "}}, "validation_failed", "cron_expressions[0]",
			"cron expression is empty", false},
		{"index of the bad expression", models.Spec{CronExpressions: []string{"0 9 * * *", "61 * * * *"}}, "validation_failed",
			"cron_expressions[1]", `"61 * * * *": minute field "61": 61 is outside 0-59`, true},
		{"hour out of range", models.Spec{CronExpressions: []string{"0 24 * * *"}}, "validation_failed", "cron_expressions[0]",
			`hour field "24": 24 is outside 0-23`, false},
		{"day of month zero", models.Spec{CronExpressions: []string{"0 0 0 * *"}}, "validation_failed", "cron_expressions[0]",
			`day-of-month field "0": 0 is outside 1-31`, false},
		{"month 13", models.Spec{CronExpressions: []string{"0 0 * 13 *"}}, "validation_failed", "cron_expressions[0]",
			`month field "13": 13 is outside 1-12`, false},
		{"weekday 8", models.Spec{CronExpressions: []string{"0 0 * * 8"}}, "validation_failed", "cron_expressions[0]",
			`day-of-week field "8": 8 is outside 0-7`, false},
		{"backwards range", models.Spec{CronExpressions: []string{"30-10 * * * *"}}, "validation_failed", "cron_expressions[0]",
			`range "30-10" runs backwards`, false},
		{"zero step", models.Spec{CronExpressions: []string{"*/0 * * * *"}}, "validation_failed", "cron_expressions[0]",
			`step "0" in "*/0" must be a whole number from 1 to 59`, false},
		{"step too large", models.Spec{CronExpressions: []string{"0 */24 * * *"}}, "validation_failed", "cron_expressions[0]",
			`step "24" in "*/24" must be a whole number from 1 to 23`, false},
		{"bad character", models.Spec{CronExpressions: []string{"0 9 * * mon-fri!"}}, "validation_failed", "cron_expressions[0]",
			`day-of-week field "mon-fri!": unexpected character '!'`, false},
		{"unknown name", models.Spec{CronExpressions: []string{"0 9 * foo *"}}, "validation_failed", "cron_expressions[0]",
			`month field "foo": cannot read "foo"`, false},
		{"empty list item", models.Spec{CronExpressions: []string{"1,,2 * * * *"}}, "validation_failed", "cron_expressions[0]",
			"empty item", false},
		{"bare L in day of week", models.Spec{CronExpressions: []string{"0 0 * * L"}}, "validation_failed", "cron_expressions[0]",
			"L in the day-of-week field needs a day before it", false},
		{"sixth weekday", models.Spec{CronExpressions: []string{"0 0 * * 5#6"}}, "validation_failed", "cron_expressions[0]",
			"the number after # must be 1 to 5", false},
		{"question mark in minute", models.Spec{CronExpressions: []string{"? * * * *"}}, "validation_failed", "cron_expressions[0]",
			"? is only allowed in the day-of-month and day-of-week fields", false},
		{"@every", models.Spec{CronExpressions: []string{"@every 5m"}}, "validation_failed", "cron_expressions[0]",
			"@every is not supported", false},
		{"@reboot", models.Spec{CronExpressions: []string{"@reboot"}}, "validation_failed", "cron_expressions[0]",
			"@reboot is not supported", false},
		{"unknown macro", models.Spec{CronExpressions: []string{"@fortnightly"}}, "validation_failed", "cron_expressions[0]",
			"unknown macro @fortnightly", false},
		{"macro with fields", models.Spec{CronExpressions: []string{"@daily 5"}}, "validation_failed", "cron_expressions[0]",
			"@daily takes no further fields", false},
		{"too long", models.Spec{CronExpressions: []string{"0 " + string(make([]byte, 300)) + " * * * *"}}, "validation_failed",
			"cron_expressions[0]", "longer than 256 characters", false},
		{"unknown timezone", models.Spec{CronExpressions: []string{"0 9 * * *"}, Timezone: "Mars/Olympus_Mons"}, "validation_failed",
			"timezone", `unknown timezone "Mars/Olympus_Mons"`, false},
		{"Local timezone", models.Spec{CronExpressions: []string{"0 9 * * *"}, Timezone: "Local"}, "validation_failed",
			"timezone", "depends on the server", false},
		{"missing every", models.Spec{Intervals: every("", "")}, "validation_failed", "intervals[0].every",
			"every is required", false},
		{"months in every", models.Spec{Intervals: every("P1M", "")}, "validation_failed", "intervals[0].every",
			"months and years have no fixed length; use a cron expression", true},
		{"years in every", models.Spec{Intervals: every("P1Y", "")}, "validation_failed", "intervals[0].every",
			"months and years have no fixed length; use a cron expression", true},
		{"zero every", models.Spec{Intervals: every("PT0S", "")}, "validation_failed", "intervals[0].every",
			"every must be at least one second", false},
		{"sub-second every", models.Spec{Intervals: every("PT0.5S", "")}, "validation_failed", "intervals[0].every",
			"fraction of a second", false},
		{"human every names the ISO form", models.Spec{Intervals: every("30 minutes", "")}, "validation_failed",
			"intervals[0].every", `"30 minutes" is not an ISO-8601 duration; write PT30M`, true},
		{"garbage every", models.Spec{Intervals: every("soon", "")}, "validation_failed", "intervals[0].every",
			`"soon" is not an ISO-8601 duration`, false},
		{"offset equal to every", models.Spec{Intervals: every("PT1H", "PT1H")}, "validation_failed", "intervals[0].offset",
			"offset PT1H must be shorter than every (PT1H)", true},
		{"offset longer than every", models.Spec{Intervals: every("PT30M", "PT45M")}, "validation_failed", "intervals[0].offset",
			"must be shorter than every", false},
		{"negative offset", models.Spec{Intervals: every("PT1H", "-PT5M")}, "validation_failed", "intervals[0].offset",
			"negative", false},
		{"months in offset", models.Spec{Intervals: every("P1W", "P1M")}, "validation_failed", "intervals[0].offset",
			"months and years have no fixed length", false},
		{"second interval", models.Spec{Intervals: []models.Interval{{Every: "PT1H"}, {Every: "PT1H", Offset: "PT2H"}}},
			"validation_failed", "intervals[1].offset", "must be shorter than every", false},
		{"never fires", models.Spec{CronExpressions: []string{"0 0 30 2 *"}}, "spec_never_fires", "cron_expressions[0]",
			`"0 0 30 2 *" never fires`, false},
		{"never fires among good parts", models.Spec{CronExpressions: []string{"0 9 * * *", "0 0 31 4,6,9,11 *"},
			Intervals: every("PT1H", "")}, "spec_never_fires", "cron_expressions[1]", "never fires", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Compile(tt.spec)
			require.Nil(t, c)
			var verr *Error
			require.ErrorAs(t, err, &verr)
			require.Equal(t, tt.code == "spec_never_fires", verr.NeverFires, "code %s", tt.code)
			require.Len(t, verr.Fields, 1, "fields: %v", verr.Fields)
			require.Contains(t, verr.Fields, tt.field)
			if tt.exact {
				require.Equal(t, tt.contains, verr.Fields[tt.field])
			} else {
				require.Contains(t, verr.Fields[tt.field], tt.contains)
			}
		})
	}
}

func TestCompileCollectsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := Compile(models.Spec{
		CronExpressions: []string{"0 9 * * *", "0 0 * * * *", "0 0 30 2 *"},
		Intervals:       []models.Interval{{Every: "P1M"}, {Every: "PT1H", Offset: "PT1H"}},
		Timezone:        "Nowhere/Special",
	})
	var verr *Error
	require.ErrorAs(t, err, &verr)
	// A syntax error outranks "never fires": the code says what to fix first.
	require.False(t, verr.NeverFires, "a spec that cannot be read is not one that never fires")
	keys := make([]string, 0, len(verr.Fields))
	for k := range verr.Fields {
		keys = append(keys, k)
	}
	require.ElementsMatch(t, []string{"cron_expressions[1]", "cron_expressions[2]", "intervals[0].every",
		"intervals[1].offset", "timezone"}, keys)
}

func TestCompileAccepts(t *testing.T) {
	t.Parallel()
	tests := []models.Spec{
		{CronExpressions: []string{"0 9 * * 1-5"}},
		{CronExpressions: []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@hourly", "@DAILY"}},
		{CronExpressions: []string{"0 9 ? * MON-FRI", "0 0 L * ?", "0 0 LW * *", "0 0 15W * *", "0 0 * * 5L", "0 0 * * 1#3"}},
		{CronExpressions: []string{"0 0 * JAN,jul *", "0 0 * * sunday", "0 0 * * 1-7", "0 0 * * 5-7", "0 0 * * fri-sun"}},
		{CronExpressions: []string{"5/15 * * * *", "00 09 * * *", "0 0 29 2 *", "0 0 * 2 1#5"}},
		{Intervals: []models.Interval{{Every: "PT1S"}, {Every: "P1W", Offset: "P6DT23H59M59S"}, {Every: "PT90M", Offset: "PT0S"}}},
		{CronExpressions: []string{"0 2 * * *"}, Timezone: "Australia/Lord_Howe"},
		{CronExpressions: []string{"0 2 * * *"}, Timezone: "UTC"},
	}
	for _, spec := range tests {
		c, err := Compile(spec)
		require.NoError(t, err, "%+v", spec)
		_, ok := c.Next(mustTime(t, "2026-01-01T00:00:00Z"))
		require.True(t, ok, "%+v", spec)
	}
}

func TestLocation(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.UTC, mustCompile(t, models.Spec{Intervals: []models.Interval{{Every: "PT1H"}}}).Location())
	c := mustCompile(t, models.Spec{CronExpressions: []string{"0 9 * * *"}, Timezone: "Europe/London"})
	require.Equal(t, "Europe/London", c.Location().String())
}

func TestIntervalAlignment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		every, offset string
		zone          string
		after         string
		want          []string
	}{
		{"hourly at :05", "PT1H", "PT5M", "", "2026-07-16T10:02:00Z", []string{"2026-07-16T10:05:00Z", "2026-07-16T11:05:00Z"}},
		{"half-hourly", "PT30M", "", "", "2026-07-16T10:10:00Z", []string{"2026-07-16T10:30:00Z", "2026-07-16T11:00:00Z"}},
		{"strictly after a fire", "PT30M", "", "", "2026-07-16T10:30:00Z", []string{"2026-07-16T11:00:00Z"}},
		{"just before a fire", "PT30M", "", "", "2026-07-16T10:29:59.999Z", []string{"2026-07-16T10:30:00Z"}},
		{"inside the fire second", "PT30M", "", "", "2026-07-16T10:30:00.5Z", []string{"2026-07-16T11:00:00Z"}},
		{"daily at 02:00 UTC whatever the zone", "P1D", "PT2H", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T02:00:00Z", "2026-03-09T02:00:00Z"}},
		{"weekly from the epoch (a Thursday)", "P1W", "", "", "2026-07-16T10:00:00Z", []string{"2026-07-23T00:00:00Z"}},
		{"seven minutes from the epoch", "PT7M", "", "", "2026-01-01T00:00:00Z", []string{"2026-01-01T00:07:00Z", "2026-01-01T00:14:00Z"}},
		{"before the epoch", "PT1H", "PT5M", "", "1969-12-31T22:30:00Z", []string{"1969-12-31T23:05:00Z", "1970-01-01T00:05:00Z"}},
		{"after cron's 2099 horizon", "P1D", "", "", "2150-06-01T12:00:00Z", []string{"2150-06-02T00:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustCompile(t, models.Spec{Intervals: []models.Interval{{Every: tt.every, Offset: tt.offset}}, Timezone: tt.zone})
			require.Equal(t, tt.want, formatTimes(c.Preview(mustTime(t, tt.after), len(tt.want))))
		})
	}
}

func TestNextCombinedTakesEarliest(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, models.Spec{
		CronExpressions: []string{"0 * * * *", "*/30 * * * *"}, // overlapping on the hour: listed once
		Intervals:       []models.Interval{{Every: "PT45M"}},
	})
	got := c.Preview(mustTime(t, "2026-01-01T10:00:00Z"), 7)
	require.Equal(t, []string{
		"2026-01-01T10:30:00Z", // cron and interval agree
		"2026-01-01T11:00:00Z",
		"2026-01-01T11:15:00Z", // interval only
		"2026-01-01T11:30:00Z",
		"2026-01-01T12:00:00Z", // cron and interval agree
		"2026-01-01T12:30:00Z",
		"2026-01-01T12:45:00Z",
	}, formatTimes(got))

	next, ok := c.Next(mustTime(t, "2026-01-01T11:01:00Z"))
	require.True(t, ok)
	require.Equal(t, "2026-01-01T11:15:00Z", next.Format(time.RFC3339))
}

func TestNextSpecialDayForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr  string
		after string
		want  []string
	}{
		{"0 9 L * *", "2026-02-01T00:00:00Z", []string{"2026-02-28T09:00:00Z", "2026-03-31T09:00:00Z", "2026-04-30T09:00:00Z"}},
		{"0 9 L 2 *", "2027-03-01T00:00:00Z", []string{"2028-02-29T09:00:00Z"}},
		// 2026-08-15 is a Saturday: the nearest weekday is Friday the 14th.
		{"0 9 15W * *", "2026-08-01T00:00:00Z", []string{"2026-08-14T09:00:00Z"}},
		// 2026-08-01 is a Saturday: W does not cross into July, so Monday the 3rd.
		{"0 9 1W * *", "2026-07-31T12:00:00Z", []string{"2026-08-03T09:00:00Z"}},
		// 2026-01-31 and 2026-02-28 are Saturdays.
		{"0 9 LW * *", "2026-01-01T00:00:00Z", []string{"2026-01-30T09:00:00Z", "2026-02-27T09:00:00Z", "2026-03-31T09:00:00Z"}},
		{"0 9 * * 5#2", "2026-01-01T00:00:00Z", []string{"2026-01-09T09:00:00Z", "2026-02-13T09:00:00Z", "2026-03-13T09:00:00Z"}},
		{"0 9 * * 5L", "2026-01-01T00:00:00Z", []string{"2026-01-30T09:00:00Z", "2026-02-27T09:00:00Z", "2026-03-27T09:00:00Z"}},
		// Only March, June, August and November 2026 have five Mondays.
		{"0 9 * * 1#5", "2026-01-01T00:00:00Z", []string{"2026-03-30T09:00:00Z", "2026-06-29T09:00:00Z", "2026-08-31T09:00:00Z"}},
		{"0 0 29 2 *", "2026-01-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		// Both day fields restricted: either matching is enough (standard cron).
		{"0 9 1 * 1", "2026-05-30T00:00:00Z", []string{"2026-06-01T09:00:00Z", "2026-06-08T09:00:00Z"}},
		// Day-of-week ranges ending on Sunday (7 or sun).
		{"0 9 * * 5-7", "2026-01-01T00:00:00Z", []string{"2026-01-02T09:00:00Z", "2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-09T09:00:00Z"}},
		{"0 9 * * fri-sun", "2026-01-01T00:00:00Z", []string{"2026-01-02T09:00:00Z", "2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-09T09:00:00Z"}},
		{"@yearly", "2026-06-01T00:00:00Z", []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
		{"5/20 * * * *", "2026-01-01T00:00:00Z", []string{"2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:45:00Z", "2026-01-01T01:05:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			c := mustCompile(t, models.Spec{CronExpressions: []string{tt.expr}})
			require.Equal(t, tt.want, formatTimes(c.Preview(mustTime(t, tt.after), len(tt.want))))
		})
	}
}

func TestNextNeverAndHorizon(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, models.Spec{CronExpressions: []string{"0 * * * *"}})
	// cronexpr's calendar ends with 2099: the last fire, then never.
	last, ok := c.Next(mustTime(t, "2099-12-31T22:30:00Z"))
	require.True(t, ok)
	require.Equal(t, "2099-12-31T23:00:00Z", last.Format(time.RFC3339))
	_, ok = c.Next(last)
	require.False(t, ok)

	// At the far end of time.Time nothing fires, and nothing overflows.
	i := mustCompile(t, models.Spec{Intervals: []models.Interval{{Every: "PT1H"}}})
	_, ok = i.Next(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	require.False(t, ok)
	first, ok := i.Next(time.Time{})
	require.True(t, ok)
	require.Equal(t, "0001-01-01T01:00:00Z", first.Format(time.RFC3339))
	require.Empty(t, c.Preview(mustTime(t, "2100-01-01T00:00:00Z"), 5))
}

func TestNextIsStrictlyAfterAndUTC(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, models.Spec{CronExpressions: []string{"30 2 * * *"}, Timezone: "Europe/Paris"})
	fire := mustTime(t, "2026-07-16T00:30:00Z") // 02:30 CEST
	next, ok := c.Next(fire.Add(-time.Nanosecond))
	require.True(t, ok)
	require.Equal(t, fire, next)
	require.Equal(t, time.UTC, next.Location())

	next, ok = c.Next(fire)
	require.True(t, ok)
	require.Equal(t, "2026-07-17T00:30:00Z", next.Format(time.RFC3339))

	// The instant's own zone does not matter, only the instant.
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	next, ok = c.Next(fire.In(paris))
	require.True(t, ok)
	require.Equal(t, "2026-07-17T00:30:00Z", next.Format(time.RFC3339))
}

func TestBetween(t *testing.T) {
	t.Parallel()
	hourly := mustCompile(t, models.Spec{CronExpressions: []string{"0 * * * *"}})
	tests := []struct {
		name     string
		from, to string
		limit    int
		want     []string
	}{
		{"from inclusive, to exclusive", "2026-01-01T10:00:00Z", "2026-01-01T13:00:00Z", 10,
			[]string{"2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"}},
		{"from just after a fire", "2026-01-01T10:00:00.5Z", "2026-01-01T12:00:00.5Z", 10,
			[]string{"2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"}},
		{"exactly limit occurrences", "2026-01-01T10:00:00Z", "2026-01-01T13:00:00Z", 3,
			[]string{"2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"}},
		{"empty range", "2026-01-01T10:00:00Z", "2026-01-01T10:00:00Z", 10, []string{}},
		{"reversed range", "2026-01-01T12:00:00Z", "2026-01-01T10:00:00Z", 10, []string{}},
		{"no fire inside", "2026-01-01T10:00:01Z", "2026-01-01T10:59:59Z", 10, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := hourly.Between(mustTime(t, tt.from), mustTime(t, tt.to), tt.limit)
			require.NoError(t, err)
			require.Equal(t, tt.want, formatTimes(got))
		})
	}
}

func TestBetweenLimit(t *testing.T) {
	t.Parallel()
	minutely := mustCompile(t, models.Spec{CronExpressions: []string{"* * * * *"}})
	from, to := mustTime(t, "2026-01-01T00:00:00Z"), mustTime(t, "2027-01-01T00:00:00Z")
	got, err := minutely.Between(from, to, 10_000)
	require.ErrorIs(t, err, ErrTooManyOccurrences)
	require.Nil(t, got)
	require.Contains(t, err.Error(), "more than 10000")

	got, err = minutely.Between(from, from.Add(3*time.Minute), 2)
	require.ErrorIs(t, err, ErrTooManyOccurrences)
	require.Nil(t, got)

	// Overlapping parts count once toward the limit.
	both := mustCompile(t, models.Spec{CronExpressions: []string{"0 * * * *"}, Intervals: []models.Interval{{Every: "PT1H"}}})
	got, err = both.Between(from, from.Add(3*time.Hour), 3)
	require.NoError(t, err)
	require.Len(t, got, 3)
}

func TestPreview(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, models.Spec{Intervals: []models.Interval{{Every: "P1D", Offset: "PT12H"}}})
	after := mustTime(t, "2026-07-16T13:00:00Z")
	require.Equal(t, []string{"2026-07-17T12:00:00Z", "2026-07-18T12:00:00Z", "2026-07-19T12:00:00Z"},
		formatTimes(c.Preview(after, 3)))
	require.Empty(t, c.Preview(after, 0))
	require.Empty(t, c.Preview(after, -1))
}

// Run with -race: cronexpr keeps per-call state, which CompiledSpec guards.
func TestCompiledSpecConcurrentUse(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, models.Spec{CronExpressions: []string{"0 9 L * *", "*/15 * * * *"}, Timezone: "America/New_York"})
	want := c.Preview(mustTime(t, "2026-03-01T00:00:00Z"), 200)
	var wg sync.WaitGroup
	results := make([][]time.Time, 8)
	for i := range results {
		wg.Go(func() { results[i] = c.Preview(mustTime(t, "2026-03-01T00:00:00Z"), 200) })
	}
	wg.Wait()
	for _, got := range results {
		require.Equal(t, want, got)
	}
}

func TestNextNeverLoopsAcrossAYearOfTransitions(t *testing.T) {
	t.Parallel()
	exprs := []string{"30 2 * * *", "*/15 * * * *", "0 * * * *", "30 1 * * *", "*/7 1-3 * * *", "0 0 * * *", "15,45 2 * * 0"}
	zones := []string{"America/New_York", "Australia/Lord_Howe", "America/Santiago", "Europe/London", "Pacific/Chatham"}
	for _, zone := range zones {
		for _, expr := range exprs {
			c := mustCompile(t, models.Spec{CronExpressions: []string{expr}, Timezone: zone})
			at := mustTime(t, "2026-01-01T00:00:00Z")
			end := mustTime(t, "2027-01-01T00:00:00Z")
			for steps := 0; at.Before(end); steps++ {
				require.Less(t, steps, 40_000, "%s in %s does not get through 2026", expr, zone)
				next, ok := c.Next(at)
				require.True(t, ok)
				require.True(t, next.After(at), "%s in %s: Next(%s) = %s", expr, zone, at, next)
				at = next
			}
		}
	}
}
