package apijson_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/scheduling"
)

// A version records the whole definition: spec, action, overlap policy and
// the settings are exactly the fields PATCH can change, so a field added
// to the API without a place in scheduling.Settings fails here.
func TestVersionSettingsAreEveryPatchField(t *testing.T) {
	t.Parallel()
	var patch []string
	typ := reflect.TypeFor[apijson.SchedulePatch]()
	for i := range typ.NumField() {
		if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			patch = append(patch, name)
		}
	}
	require.ElementsMatch(t, patch, append([]string{"spec", "action", "overlap_policy"}, scheduling.SettingFields...))
}
