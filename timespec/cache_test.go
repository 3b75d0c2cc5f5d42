package timespec

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

// The cache hands back the spec compiled before for the same content, and
// never one of another content: each field of models.Spec is in the key.
// A field added to models.Spec and not to specKey fails here.
func TestSpecKeyCoversEveryField(t *testing.T) {
	base := models.Spec{CronExpressions: []string{"0 * * * *"}, Intervals: []models.Interval{{Every: "PT1H", Offset: "PT5M"}}, Timezone: "UTC"}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		changed := base
		changed.CronExpressions = append([]string(nil), base.CronExpressions...)
		changed.Intervals = append([]models.Interval(nil), base.Intervals...)
		f := reflect.ValueOf(&changed).Elem().Field(i)
		switch v := f.Addr().Interface().(type) {
		case *string:
			*v += "x"
		case *[]string:
			*v = append(*v, "x")
		case *[]models.Interval:
			(*v)[0].Offset = "PT6M"
		default:
			t.Fatalf("models.Spec.%s (%s): teach specKey and this test about it", typ.Field(i).Name, f.Type())
		}
		require.NotEqual(t, specKey(base, nil), specKey(changed, nil), "models.Spec.%s changes the key", typ.Field(i).Name)
	}
	// Length prefixes: moving text between parts changes the key.
	require.NotEqual(t, specKey(models.Spec{CronExpressions: []string{"a b", "c"}}, nil), specKey(models.Spec{CronExpressions: []string{"a", "b c"}}, nil))
	require.NotEqual(t, specKey(models.Spec{Intervals: []models.Interval{{Every: "PT1H"}}}, nil), specKey(models.Spec{Intervals: []models.Interval{{Offset: "PT1H"}}}, nil))
}

func TestCompileReusesAndDescribesOnDemand(t *testing.T) {
	spec := models.Spec{CronExpressions: []string{"30 2 * * *"}, Timezone: "Europe/Zagreb"}
	a, err := Compile(spec)
	require.NoError(t, err)
	b, err := Compile(models.Spec{CronExpressions: []string{"30 2 * * *"}, Timezone: "Europe/Zagreb"})
	require.NoError(t, err)
	require.Same(t, a, b, "the same content compiles once")
	require.Equal(t, "At 02:30 every day (Europe/Zagreb)", a.Description())
	require.Equal(t, "Europe/Zagreb", a.Text().Zone)

	other, err := Compile(models.Spec{CronExpressions: []string{"30 2 * * *"}, Timezone: "Europe/Vienna"})
	require.NoError(t, err)
	require.NotSame(t, a, other)
	require.Equal(t, "Europe/Vienna", other.Location().String())

	// A spec that does not compile is not cached: it fails every time.
	for range 2 {
		_, err = Compile(models.Spec{CronExpressions: []string{"not a cron"}})
		require.Error(t, err)
	}
}

// The cache stays within its bound however many specs pass through it.
func TestSpecCacheIsBounded(t *testing.T) {
	c := &specCache{entries: map[string]*CompiledSpec{}}
	for i := range specCacheSize + 100 {
		c.put(string(rune(i+1))+"k", &CompiledSpec{})
	}
	require.Len(t, c.entries, specCacheSize)
}
