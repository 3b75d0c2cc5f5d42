package timespec

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

func TestDescriptionCron(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		zone string
		want string
	}{
		{"30 2 * * *", "America/New_York", "At 02:30 every day (America/New_York)"},
		{"* * * * *", "", "Every minute (UTC)"},
		{"*/15 * * * *", "", "Every 15 minutes (UTC)"},
		{"*/7 * * * *", "", "Every 7th minute (UTC)"},
		{"5 * * * *", "", "At 5 minutes past every hour (UTC)"},
		{"1 * * * *", "", "At 1 minute past every hour (UTC)"},
		{"@hourly", "", "Every hour (UTC)"},
		{"0 */2 * * *", "", "Every 2 hours (UTC)"},
		{"0 */5 * * *", "", "Every 5th hour (UTC)"},
		{"15 */6 * * *", "", "Every 6 hours, at 15 minutes past the hour (UTC)"},
		{"0 9,17 * * *", "Europe/London", "At 09:00 and 17:00 every day (Europe/London)"},
		{"0,30 9 * * *", "", "At 09:00 and 09:30 every day (UTC)"},
		{"@daily", "", "At 00:00 every day (UTC)"},
		{"0 9 * * 1-5", "", "At 09:00 on Monday through Friday (UTC)"},
		{"0 9 * * 1,3,5", "", "At 09:00 on Monday, Wednesday and Friday (UTC)"},
		{"0 0 * * fri-sun", "", "At 00:00 on Friday through Sunday (UTC)"},
		{"@weekly", "", "At 00:00 on Sunday (UTC)"},
		{"@monthly", "", "At 00:00 on day 1 of the month (UTC)"},
		{"@yearly", "", "At 00:00 on January 1 (UTC)"},
		{"0 9 1,15 * *", "", "At 09:00 on days 1 and 15 of the month (UTC)"},
		{"0 9 1-7 * *", "", "At 09:00 on days 1 through 7 of the month (UTC)"},
		{"0 0 L * *", "", "At 00:00 on the last day of the month (UTC)"},
		{"0 9 LW * *", "", "At 09:00 on the last weekday of the month (UTC)"},
		{"0 9 15W * *", "", "At 09:00 on the weekday nearest day 15 of the month (UTC)"},
		{"0 9 * * 5#2", "", "At 09:00 on the second Friday of the month (UTC)"},
		{"0 9 * * 5L", "", "At 09:00 on the last Friday of the month (UTC)"},
		{"0 9 1 * 1", "", "At 09:00 on day 1 of the month or on Monday (UTC)"},
		{"0 9 * 1,7 *", "", "At 09:00 every day in January and July (UTC)"},
		{"0 9 * 3-6 *", "", "At 09:00 every day in March through June (UTC)"},
		{"0 9 1 */3 *", "", "At 09:00 on day 1 of the month in January, April, July and October (UTC)"},
		{"*/15 9-17 * * 1-5", "", "Every 15 minutes during hours 9 through 17 on Monday through Friday (UTC)"},
		{"0,30 9-17 * * *", "", "At minutes 0 and 30 past hours 9 through 17 (UTC)"},
		{"5 1-23/2 * * *", "", "At minute 5 past every 2nd hour from 1 through 23 (UTC)"},
		{"5/7 * * * *", "", "At every 7th minute from 5 through 59 past every hour (UTC)"},
		{"0 9 */2 * *", "", "At 09:00 on every 2nd day of the month (UTC)"},
		{"0 9 */10 * *", "", "At 09:00 on days 1, 11, 21 and 31 of the month (UTC)"},
		{"0 9 1,L * *", "", "At 09:00 on day 1 of the month and the last day of the month (UTC)"},
		{"0 9 * * 1#1,5L", "", "At 09:00 on the first Monday of the month and the last Friday of the month (UTC)"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			c := mustCompile(t, models.Spec{CronExpressions: []string{tt.expr}, Timezone: tt.zone})
			require.Equal(t, tt.want, c.Description())
		})
	}
}

func TestDescriptionIntervalsAndCombined(t *testing.T) {
	t.Parallel()
	iv := func(every, offset string) models.Interval { return models.Interval{Every: every, Offset: offset} }
	tests := []struct {
		name string
		spec models.Spec
		want string
	}{
		{"with offset", models.Spec{Intervals: []models.Interval{iv("PT30M", "PT5M")}}, "Every 30 minutes, offset 5 minutes"},
		{"hour", models.Spec{Intervals: []models.Interval{iv("PT1H", "")}}, "Every hour"},
		{"day", models.Spec{Intervals: []models.Interval{iv("P1D", "PT0S")}}, "Every day"},
		{"week", models.Spec{Intervals: []models.Interval{iv("P1W", "")}}, "Every week"},
		{"weeks", models.Spec{Intervals: []models.Interval{iv("P2W", "P1D")}}, "Every 2 weeks, offset 1 day"},
		{"mixed units", models.Spec{Intervals: []models.Interval{iv("PT1H30M", "")}}, "Every 1 hour and 30 minutes"},
		{"seconds", models.Spec{Intervals: []models.Interval{iv("PT90S", "PT1S")}}, "Every 1 minute and 30 seconds, offset 1 second"},
		{"three units", models.Spec{Intervals: []models.Interval{iv("P1DT2H3M", "")}}, "Every 1 day, 2 hours and 3 minutes"},
		{"combined", models.Spec{CronExpressions: []string{"0 9 * * *", "0 17 * * 5"}, Intervals: []models.Interval{iv("PT30M", "")},
			Timezone: "Europe/London"},
			"At 09:00 every day (Europe/London); At 17:00 on Friday (Europe/London); Every 30 minutes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, mustCompile(t, tt.spec).Description())
		})
	}
}
