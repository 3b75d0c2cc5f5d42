package runner

import (
	"os"
	"testing"
)

// TestMain makes this test binary a shim-capable one, as main.go makes
// tideline: the tests here then run every command through the shim, the
// way `tideline worker` does (the cli package's tests run them without).
func TestMain(m *testing.M) {
	ShimMain()
	os.Exit(m.Run())
}
