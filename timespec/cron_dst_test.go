package timespec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

// 2026 transitions (from Go's tz database; every one falls on a Sunday):
//
//	America/New_York     2026-03-08 07:00Z  02:00 EST → 03:00 EDT (gap)       2026-11-01 06:00Z  02:00 EDT → 01:00 EST (repeat)
//	Europe/London        2026-03-29 01:00Z  01:00 GMT → 02:00 BST (gap)       2026-10-25 01:00Z  02:00 BST → 01:00 GMT (repeat)
//	Australia/Sydney     2026-04-04 16:00Z  03:00 AEDT → 02:00 AEST (repeat)  2026-10-03 16:00Z  02:00 AEST → 03:00 AEDT (gap)
//	Australia/Lord_Howe  2026-04-04 15:00Z  02:00 +11 → 01:30 +1030 (repeat)  2026-10-03 15:30Z  02:00 +1030 → 02:30 +11 (gap)
//	America/Santiago     2026-04-05 03:00Z  24:00 -03 → 23:00 -04 (repeat)    2026-09-06 04:00Z  00:00 -04 → 01:00 -03 (gap)
//	Asia/Kolkata         none (+05:30 all year)
func TestNextAcrossDSTTransitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		zone  string
		expr  string
		after string
		want  []string
	}{
		// New York
		{"NY daily in gap shifts by the gap", "America/New_York", "30 2 * * *", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"}},
		{"NY gap fire still ahead just after the jump", "America/New_York", "30 2 * * *", "2026-03-08T07:10:00Z",
			[]string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"}},
		{"NY daily repeated fires first occurrence only", "America/New_York", "30 1 * * *", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"NY daily not again in second pass", "America/New_York", "30 1 * * *", "2026-11-01T05:45:00Z",
			[]string{"2026-11-02T06:30:00Z"}},
		{"NY hourly spring", "America/New_York", "0 * * * *", "2026-03-08T05:30:00Z",
			[]string{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"NY hourly fall follows real time", "America/New_York", "0 * * * *", "2026-11-01T04:30:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{"NY every 15 minutes spring", "America/New_York", "*/15 * * * *", "2026-03-08T06:30:00Z",
			[]string{"2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z"}},
		{"NY every 15 minutes fall covers both passes", "America/New_York", "*/15 * * * *", "2026-11-01T05:40:00Z",
			[]string{"2026-11-01T05:45:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:15:00Z", "2026-11-01T06:30:00Z",
				"2026-11-01T06:45:00Z", "2026-11-01T07:00:00Z"}},
		{"NY every 15 minutes from inside second pass", "America/New_York", "*/15 * * * *", "2026-11-01T06:20:00Z",
			[]string{"2026-11-01T06:30:00Z", "2026-11-01T06:45:00Z"}},
		{"NY named hour fires in first pass only", "America/New_York", "*/30 1 * * *", "2026-11-01T04:00:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:00:00Z", "2026-11-02T06:30:00Z"}},
		{"NY weekly spring", "America/New_York", "0 2 * * 0", "2026-03-01T00:00:00Z",
			[]string{"2026-03-01T07:00:00Z", "2026-03-08T07:00:00Z", "2026-03-15T06:00:00Z"}},
		{"NY weekly fall", "America/New_York", "30 1 * * sun", "2026-10-20T00:00:00Z",
			[]string{"2026-10-25T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-08T06:30:00Z"}},

		// London
		{"London daily in gap", "Europe/London", "30 1 * * *", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"}},
		{"London daily repeated", "Europe/London", "30 1 * * *", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"London hourly spring", "Europe/London", "0 * * * *", "2026-03-28T23:30:00Z",
			[]string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"London hourly fall", "Europe/London", "0 * * * *", "2026-10-24T23:30:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
		{"London every 15 minutes spring", "Europe/London", "*/15 * * * *", "2026-03-29T00:40:00Z",
			[]string{"2026-03-29T00:45:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z"}},
		{"London every 15 minutes fall", "Europe/London", "*/15 * * * *", "2026-10-25T00:40:00Z",
			[]string{"2026-10-25T00:45:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:15:00Z"}},
		{"London weekly spring", "Europe/London", "30 1 * * 0", "2026-03-20T00:00:00Z",
			[]string{"2026-03-22T01:30:00Z", "2026-03-29T01:30:00Z", "2026-04-05T00:30:00Z"}},
		{"London weekly fall", "Europe/London", "30 1 * * 0", "2026-10-15T00:00:00Z",
			[]string{"2026-10-18T00:30:00Z", "2026-10-25T00:30:00Z", "2026-11-01T01:30:00Z"}},

		// Sydney (southern hemisphere: the repeat is in April, the gap in October)
		{"Sydney daily repeated", "Australia/Sydney", "30 2 * * *", "2026-04-04T00:00:00Z",
			[]string{"2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"}},
		{"Sydney daily in gap", "Australia/Sydney", "30 2 * * *", "2026-10-03T00:00:00Z",
			[]string{"2026-10-03T16:30:00Z", "2026-10-04T15:30:00Z"}},
		{"Sydney hourly April", "Australia/Sydney", "0 * * * *", "2026-04-04T14:30:00Z",
			[]string{"2026-04-04T15:00:00Z", "2026-04-04T16:00:00Z", "2026-04-04T17:00:00Z"}},
		{"Sydney hourly October", "Australia/Sydney", "0 * * * *", "2026-10-03T15:30:00Z",
			[]string{"2026-10-03T16:00:00Z", "2026-10-03T17:00:00Z"}},
		{"Sydney every 15 minutes April", "Australia/Sydney", "*/15 * * * *", "2026-04-04T15:40:00Z",
			[]string{"2026-04-04T15:45:00Z", "2026-04-04T16:00:00Z", "2026-04-04T16:15:00Z"}},
		{"Sydney every 15 minutes October", "Australia/Sydney", "*/15 * * * *", "2026-10-03T15:40:00Z",
			[]string{"2026-10-03T15:45:00Z", "2026-10-03T16:00:00Z", "2026-10-03T16:15:00Z"}},
		{"Sydney weekly April", "Australia/Sydney", "30 2 * * 0", "2026-03-30T00:00:00Z",
			[]string{"2026-04-04T15:30:00Z", "2026-04-11T16:30:00Z"}},
		{"Sydney weekly October", "Australia/Sydney", "30 2 * * 0", "2026-09-28T00:00:00Z",
			[]string{"2026-10-03T16:30:00Z", "2026-10-10T15:30:00Z"}},

		// Kolkata: half-hour offset, no DST, unmoved by other zones' transition dates
		{"Kolkata daily", "Asia/Kolkata", "30 2 * * *", "2026-03-07T12:00:00Z",
			[]string{"2026-03-07T21:00:00Z", "2026-03-08T21:00:00Z"}},
		{"Kolkata hourly", "Asia/Kolkata", "0 * * * *", "2026-11-01T05:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}},
		{"Kolkata every 15 minutes", "Asia/Kolkata", "*/15 * * * *", "2026-03-29T00:40:00Z",
			[]string{"2026-03-29T00:45:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z"}},
		{"Kolkata weekly", "Asia/Kolkata", "0 9 * * 1", "2026-10-01T00:00:00Z",
			[]string{"2026-10-05T03:30:00Z", "2026-10-12T03:30:00Z"}},

		// Lord Howe: the shift is 30 minutes
		{"Lord Howe daily repeated", "Australia/Lord_Howe", "45 1 * * *", "2026-04-04T00:00:00Z",
			[]string{"2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}},
		{"Lord Howe daily in gap", "Australia/Lord_Howe", "15 2 * * *", "2026-10-03T00:00:00Z",
			[]string{"2026-10-03T15:45:00Z", "2026-10-04T15:15:00Z"}},
		{"Lord Howe gap fire still ahead just after the jump", "Australia/Lord_Howe", "15 2 * * *", "2026-10-03T15:35:00Z",
			[]string{"2026-10-03T15:45:00Z", "2026-10-04T15:15:00Z"}},
		// 02:10 is in the gap and shifts to 02:40, after the real 02:35.
		{"Lord Howe gap shift lands after a later wall time", "Australia/Lord_Howe", "10,35 2 * * *", "2026-10-03T00:00:00Z",
			[]string{"2026-10-03T15:35:00Z", "2026-10-03T15:40:00Z", "2026-10-04T15:10:00Z"}},
		{"Lord Howe hourly April", "Australia/Lord_Howe", "0 * * * *", "2026-04-04T13:30:00Z",
			[]string{"2026-04-04T14:00:00Z", "2026-04-04T15:30:00Z", "2026-04-04T16:30:00Z"}},
		{"Lord Howe hourly at :30 April repeats the half hour", "Australia/Lord_Howe", "30 * * * *", "2026-04-04T13:30:00Z",
			[]string{"2026-04-04T14:30:00Z", "2026-04-04T15:00:00Z", "2026-04-04T16:00:00Z"}},
		{"Lord Howe hourly October", "Australia/Lord_Howe", "0 * * * *", "2026-10-03T14:00:00Z",
			[]string{"2026-10-03T14:30:00Z", "2026-10-03T15:30:00Z", "2026-10-03T16:00:00Z"}},
		{"Lord Howe every 15 minutes April", "Australia/Lord_Howe", "*/15 * * * *", "2026-04-04T14:20:00Z",
			[]string{"2026-04-04T14:30:00Z", "2026-04-04T14:45:00Z", "2026-04-04T15:00:00Z", "2026-04-04T15:15:00Z",
				"2026-04-04T15:30:00Z"}},
		{"Lord Howe every 15 minutes October", "Australia/Lord_Howe", "*/15 * * * *", "2026-10-03T15:10:00Z",
			[]string{"2026-10-03T15:15:00Z", "2026-10-03T15:30:00Z", "2026-10-03T15:45:00Z", "2026-10-03T16:00:00Z"}},
		{"Lord Howe weekly April", "Australia/Lord_Howe", "45 1 * * 0", "2026-03-30T00:00:00Z",
			[]string{"2026-04-04T14:45:00Z", "2026-04-11T15:15:00Z"}},
		{"Lord Howe weekly October", "Australia/Lord_Howe", "15 2 * * 0", "2026-09-28T00:00:00Z",
			[]string{"2026-10-03T15:45:00Z", "2026-10-10T15:15:00Z"}},

		// Santiago changes at midnight, so the gap swallows the start of a day.
		{"Santiago midnight in gap", "America/Santiago", "0 0 * * *", "2026-09-05T12:00:00Z",
			[]string{"2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"}},
		{"Santiago repeated late evening", "America/Santiago", "30 23 * * *", "2026-04-04T12:00:00Z",
			[]string{"2026-04-05T02:30:00Z", "2026-04-06T03:30:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := mustCompile(t, models.Spec{CronExpressions: []string{tt.expr}, Timezone: tt.zone})
			got := spec.Preview(mustTime(t, tt.after), len(tt.want))
			require.Equal(t, tt.want, formatTimes(got), "%s in %s after %s", tt.expr, tt.zone, tt.after)
		})
	}
}

// Over a whole year the DST rules must neither lose nor duplicate fires:
// expressions that follow real time fire exactly as often as in UTC, and a
// daily wall-clock time fires once a day, including both transition days.
func TestYearCountsAcrossDST(t *testing.T) {
	t.Parallel()
	zones := []string{"America/New_York", "Europe/London", "Australia/Sydney", "Asia/Kolkata", "Australia/Lord_Howe", "America/Santiago"}
	tests := []struct {
		expr string
		want int
	}{
		{"*/15 * * * *", 365 * 24 * 4},
		{"30 2 * * *", 365},
		{"30 1 * * *", 365},
		{"0 0 * * *", 365},
		{"0 2 * * 0", 52}, // 2026 has 52 Sundays
	}
	from := mustTime(t, "2026-01-01T00:00:00Z")
	to := mustTime(t, "2027-01-01T00:00:00Z")
	for _, zone := range zones {
		for _, tt := range tests {
			t.Run(zone+" "+tt.expr, func(t *testing.T) {
				t.Parallel()
				spec := mustCompile(t, models.Spec{CronExpressions: []string{tt.expr}, Timezone: zone})
				got, err := spec.Between(from, to, 100_000)
				require.NoError(t, err)
				require.Len(t, got, tt.want)
				for i := 1; i < len(got); i++ {
					require.True(t, got[i].After(got[i-1]), "fire %d (%s) is not after %s", i, got[i], got[i-1])
				}
			})
		}
	}
}

func TestHourlyFollowsRealTimeInWholeHourZones(t *testing.T) {
	t.Parallel()
	// Every zone here shifts by whole hours, so an hourly expression fires
	// 8760 times in 2026, exactly one hour apart.
	for _, zone := range []string{"America/New_York", "Europe/London", "Australia/Sydney", "America/Santiago"} {
		for _, expr := range []string{"0 * * * *", "@hourly", "0 */1 * * *", "0 0-23 * * *"} {
			t.Run(zone+" "+expr, func(t *testing.T) {
				t.Parallel()
				spec := mustCompile(t, models.Spec{CronExpressions: []string{expr}, Timezone: zone})
				got, err := spec.Between(mustTime(t, "2026-01-01T00:00:00Z"), mustTime(t, "2027-01-01T00:00:00Z"), 10_000)
				require.NoError(t, err)
				require.Len(t, got, 8760)
				for i := 1; i < len(got); i++ {
					require.Equal(t, time.Hour, got[i].Sub(got[i-1]), "gap before %s", got[i])
				}
			})
		}
	}
}

func mustCompile(t testing.TB, spec models.Spec) *CompiledSpec {
	t.Helper()
	c, err := Compile(spec)
	require.NoError(t, err)
	return c
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v
}

func formatTimes(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, v := range ts {
		out[i] = v.Format(time.RFC3339Nano)
	}
	return out
}
