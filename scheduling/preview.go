package scheduling

import (
	"context"
	"fmt"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// SpecPreview is what the create form shows while the operator types.
type SpecPreview struct {
	Description string
	Text        timespec.SpecText // Description in parts, the zone apart
	FireTimes   []time.Time
	// Items are the next occurrences with what the spec's calendars do to
	// them (planned, excluded, moved): FireTimes are the planned and moved
	// ones.
	Items []timespec.Occurrence
	// Excluded are the occurrences calendars took away up to the last of
	// FireTimes, with where each moved: also those moved onto a fire of
	// their own, which Items list once, as planned.
	Excluded []timespec.Excluded
}

// MaxPreviewCount caps how many fire times one preview lists: with the
// spec bounds of timespec.Compile it keeps a preview's work small and fixed.
const MaxPreviewCount = 100

// PreviewSpec validates a spec and lists its next count canonical fire
// times after `after`. Field errors carry the "spec." prefix, like Create's.
//
// cals are the calendars spec.exclude_calendars may name (Service.PreviewSpec
// reads a namespace's).
func PreviewSpec(spec models.Spec, after time.Time, count int, cals ...*timespec.Calendar) (*SpecPreview, error) {
	if spec.Timezone == "" {
		spec.Timezone = "UTC"
	}
	v := &ValidationError{Code: CodeValidationFailed}
	if count < 1 || count > MaxPreviewCount {
		v.Add("count", fmt.Sprintf("must be between 1 and %d", MaxPreviewCount))
	}
	compiled := compileField(v, spec, cals...)
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	p := &SpecPreview{Description: compiled.Description(), Text: compiled.Text(), FireTimes: compiled.Preview(after, count),
		Items: compiled.Explain(after, count)}
	if n := len(p.FireTimes); n > 0 {
		p.Excluded = compiled.ExcludedBetween(after.Add(time.Second), p.FireTimes[n-1].Add(time.Second), count)
	}
	return p, nil
}

// PreviewSpec is the package's PreviewSpec with the calendars of namespace.
func (s *Service) PreviewSpec(ctx context.Context, namespace string, spec models.Spec, after time.Time, count int) (*SpecPreview, error) {
	cals, err := s.calendarsForChange(ctx, s.db, namespace, &spec, nil)
	if err != nil {
		return nil, err
	}
	return PreviewSpec(spec, after, count, cals...)
}
