package scheduling

import (
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
}

// MaxPreviewCount caps how many fire times one preview lists: with the
// spec bounds of timespec.Compile it keeps a preview's work small and fixed.
const MaxPreviewCount = 100

// PreviewSpec validates a spec and lists its next count canonical fire
// times after `after`. Field errors carry the "spec." prefix, like Create's.
func PreviewSpec(spec models.Spec, after time.Time, count int) (*SpecPreview, error) {
	if spec.Timezone == "" {
		spec.Timezone = "UTC"
	}
	v := &ValidationError{Code: CodeValidationFailed}
	if count < 1 || count > MaxPreviewCount {
		v.Add("count", fmt.Sprintf("must be between 1 and %d", MaxPreviewCount))
	}
	compiled := compileField(v, spec)
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	return &SpecPreview{Description: compiled.Description(), Text: compiled.Text(), FireTimes: compiled.Preview(after, count)}, nil
}
