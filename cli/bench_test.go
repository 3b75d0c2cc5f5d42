package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
)

// A small bench on each database prints one row per instant and the
// summary table with every column, finds every occurrence fired exactly
// once, and leaves nothing behind.
func TestBenchPrintsItsTable(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			var url, file string
			if dialect == "sqlite" {
				file = filepath.Join(t.TempDir(), "bench.db")
				url = "sqlite:" + file
			} else {
				url = dbtest.PostgresURL(t)
			}
			profile := filepath.Join(t.TempDir(), "bench.cpu")
			out, errOut, err := runCLI(t, nil, "bench", "--database", url, "--schedules", "30", "--instants", "2", "--every", "2s",
				"--fire-ahead", "1s", "--replicas", "2", "--cpuprofile", profile)
			require.NoError(t, err, "stderr: %s", errOut)
			prof, err := os.ReadFile(profile)
			require.NoError(t, err)
			require.Greater(t, len(prof), 2)
			require.Equal(t, []byte{0x1f, 0x8b}, prof[:2], "a pprof profile is gzipped")

			lines := strings.Split(strings.TrimSpace(out), "\n")
			cells := regexp.MustCompile(`\s{2,}`)
			var header, summary []string
			instants := 0
			for i, line := range lines {
				if strings.HasPrefix(line, "instant ") {
					for _, row := range lines[i+1 : i+3] {
						c := cells.Split(row, -1)
						require.Len(t, c, 6, "instant row %q", row)
						require.Equal(t, "30", c[1], "all 30 runs seen at instant %s", c[0])
						instants++
					}
				}
				if strings.HasPrefix(line, "database ") {
					header, summary = cells.Split(line, -1), cells.Split(lines[i+1], -1)
				}
			}
			require.Equal(t, 2, instants, "output:\n%s", out)
			require.Equal(t, benchColumns, header, "output:\n%s", out)
			require.Len(t, summary, len(benchColumns), "summary row %v", summary)
			col := func(name string) string { return summary[indexOf(header, name)] }
			require.Equal(t, dialect, col("database"))
			require.Equal(t, "30", col("schedules"))
			require.Equal(t, "2", col("instants"))
			require.Equal(t, "60", col("fires"))
			require.Equal(t, "yes", col("exactly once"))
			for _, name := range []string{"bytes/fire", "rows/fire", "fires/s"} {
				v, err := strconv.ParseFloat(col(name), 64)
				require.NoError(t, err, "%s = %q", name, col(name))
				require.Positive(t, v, name)
			}
			// The loops' CPU per fire, and on PostgreSQL their backends'.
			cpuCols := []string{"cpu/fire"}
			if dialect == "postgres" {
				cpuCols = append(cpuCols, "db cpu/fire")
			} else {
				require.Equal(t, "-", col("db cpu/fire"))
			}
			for _, name := range cpuCols {
				us, ok := strings.CutSuffix(col(name), " µs")
				require.True(t, ok, "%s = %q", name, col(name))
				v, err := strconv.ParseFloat(us, 64)
				require.NoError(t, err, "%s = %q", name, col(name))
				require.Positive(t, v, name)
			}
			// Each fire adds at least its run and its audit event.
			rows, _ := strconv.ParseFloat(col("rows/fire"), 64)
			require.GreaterOrEqual(t, rows, 2.0)
			if dialect == "postgres" {
				ins, err := strconv.ParseFloat(col("inserts/fire"), 64)
				require.NoError(t, err)
				require.GreaterOrEqual(t, ins, rows, "pg_stat counts at least the rows that stayed")
			} else {
				require.Equal(t, "-", col("inserts/fire"))
			}

			// The bench cleaned up after itself.
			if dialect == "sqlite" {
				_, err := os.Stat(file)
				require.ErrorIs(t, err, os.ErrNotExist)
				return
			}
			schema := regexp.MustCompile(`tideline_bench_[0-9a-z]{26}`).FindString(errOut)
			require.NotEmpty(t, schema, "stderr names the schema: %s", errOut)
			db, err := database.Open(context.Background(), os.Getenv(dbtest.EnvURL))
			require.NoError(t, err)
			defer db.Close()
			n, err := db.NewSelect().Table("pg_namespace").Where("nspname = ?", schema).Count(context.Background())
			require.NoError(t, err)
			require.Zero(t, n, "schema %s was dropped", schema)
		})
	}
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// The bench never writes into a database that exists, and checks its flags
// before touching any.
func TestBenchRefusesAnExistingFileAndBadFlags(t *testing.T) {
	t.Parallel()
	existing := filepath.Join(t.TempDir(), "mine.db")
	require.NoError(t, os.WriteFile(existing, []byte("precious"), 0o600))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--database", "sqlite:" + existing}, "refusing to bench in " + existing + ": it exists already"},
		{[]string{"--schedules", "0"}, "invalid --schedules 0"},
		{[]string{"--instants", "101"}, "invalid --instants 101"},
		{[]string{"--every", "1500ms"}, "invalid --every 1.5s: want whole seconds"},
		{[]string{"--replicas", "0"}, "invalid --replicas 0"},
		{[]string{"--fire-ahead", "16m"}, "invalid --fire-ahead 16m0s"},
		{[]string{"--database", "mysql://x"}, `invalid --database "mysql://x"`},
		{[]string{"--output", "csv"}, `invalid --output "csv"`},
		{[]string{"now"}, `unexpected argument "now"`},
	}
	for _, c := range cases {
		_, _, err := runCLI(t, nil, append([]string{"bench"}, c.args...)...)
		require.ErrorContains(t, err, c.want, "bench %v", c.args)
		requireExit(t, 2, err)
	}
	raw, err := os.ReadFile(existing)
	require.NoError(t, err)
	require.Equal(t, "precious", string(raw))
}
