package timespec

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

// sizedSpec builds a spec of crons cron expressions and intervals intervals;
// the first cron expression (or every) is padded to partLen characters while
// staying valid, so only the size rules decide.
func sizedSpec(crons, intervals, partLen int) models.Spec {
	spec := models.Spec{Timezone: "UTC"}
	for i := range crons {
		expr := "0 * * * *"
		if i == 0 && partLen > len(expr) {
			// "0,0,0 * * * *" is valid at any length; a trailing space pads odd ones.
			list := "0" + strings.Repeat(",0", (partLen-len(expr))/2)
			expr = list + " * * * *" + strings.Repeat(" ", partLen-len(list)-8)
		}
		spec.CronExpressions = append(spec.CronExpressions, expr)
	}
	for i := range intervals {
		every := "PT1H"
		if i == 0 && crons == 0 && partLen > len(every) {
			every = "PT" + strings.Repeat("0", partLen-len(every)) + "1H" // leading zeros: still one hour
		}
		spec.Intervals = append(spec.Intervals, models.Interval{Every: every})
	}
	return spec
}

func TestCompileBoundsSpecSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		spec       models.Spec
		wantField  string // "" means the spec compiles
		wantInText string
	}{
		{"64 cron expressions", sizedSpec(64, 0, 0), "", ""},
		{"32 + 32", sizedSpec(32, 32, 0), "", ""},
		{"65 cron expressions", sizedSpec(65, 0, 0), "cron_expressions", "at most 64 cron expressions and intervals together (this one has 65)"},
		{"40 + 25", sizedSpec(40, 25, 0), "cron_expressions", "at most 64"},
		{"76,000 expressions (the attack)", sizedSpec(76_000, 0, 0), "cron_expressions", "this one has 76000"},
		{"an expression of 256 characters", sizedSpec(1, 0, 256), "", ""},
		{"an expression of 257 characters", sizedSpec(1, 0, 257), "cron_expressions[0]", "longer than 256 characters"},
		{"an every of 257 characters", sizedSpec(0, 1, 257), "intervals[0].every", "longer than 256 characters"},
		{"an offset of 257 characters", models.Spec{Intervals: []models.Interval{{Every: "PT1H", Offset: "PT" + strings.Repeat("0", 254) + "1M"}}}, "intervals[0].offset", "longer than 256"},
		{"a timezone of 257 characters", models.Spec{CronExpressions: []string{"0 * * * *"}, Timezone: strings.Repeat("A", 257)}, "timezone", "longer than 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compiled, err := Compile(tc.spec)
			if tc.wantField == "" {
				require.NoError(t, err)
				require.Len(t, compiled.Preview(time.Unix(0, 0), 3), 3)
				return
			}
			var verr *Error
			require.ErrorAs(t, err, &verr)
			require.False(t, verr.NeverFires, "a spec that cannot be read is not one that never fires")
			require.Contains(t, verr.Fields[tc.wantField], tc.wantInText, "fields: %v", verr.Fields)
		})
	}
}

// FuzzCompileSpecSize checks the size rules for any mix of part counts and
// lengths: a spec over a bound is always refused, naming the bound, and one
// within the bounds is never refused for its size. Run longer with:
// go test ./timespec -fuzz FuzzCompileSpecSize -run '^$'
func FuzzCompileSpecSize(f *testing.F) {
	for _, seed := range [][3]uint16{{1, 0, 0}, {64, 0, 0}, {65, 0, 0}, {0, 64, 0}, {0, 65, 0}, {32, 33, 0}, {1, 0, 256}, {1, 0, 257}, {0, 1, 300}, {2000, 0, 4000}} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, crons, intervals, partLen uint16) {
		nc, ni, pl := int(crons%2048), int(intervals%2048), int(partLen%4096)
		if nc+ni == 0 {
			return // covered by the "at least one" rule
		}
		spec := sizedSpec(nc, ni, pl)
		longest := 0
		for _, s := range spec.CronExpressions {
			longest = max(longest, utf8.RuneCountInString(s))
		}
		for _, iv := range spec.Intervals {
			longest = max(longest, utf8.RuneCountInString(iv.Every))
		}
		compiled, err := Compile(spec)
		switch {
		case nc+ni > MaxSpecParts:
			var verr *Error
			require.ErrorAs(t, err, &verr)
			require.Equal(t, fmt.Sprintf("a spec may have at most %d cron expressions and intervals together (this one has %d)", MaxSpecParts, nc+ni), verr.Fields["cron_expressions"])
		case longest > MaxSpecPartLength:
			var verr *Error
			require.ErrorAs(t, err, &verr)
			require.Len(t, verr.Fields, 1, "only the long part is named: %v", verr.Fields)
			for field, msg := range verr.Fields {
				require.Contains(t, []string{"cron_expressions[0]", "intervals[0].every"}, field)
				require.Equal(t, "is longer than 256 characters", msg)
			}
		default:
			require.NoError(t, err, "%d crons, %d intervals, longest %d", nc, ni, longest)
			require.NotEmpty(t, compiled.Preview(time.Unix(0, 0), 1))
		}
	})
}
