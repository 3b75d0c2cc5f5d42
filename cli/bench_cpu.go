package cli

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

// benchLoopApp is the application_name of the bench loops' connections on
// PostgreSQL, so their backends' CPU can be told from the observer's and
// from anything else the server runs.
const benchLoopApp = "tideline_bench_loop"

// cpuUse is the CPU a bench's loops used while they ran: this process's
// (the loops, and the observer's polling, which is the same in every
// build) and, on PostgreSQL on this machine, the backends serving the
// loops' connections (/proc/PID/stat; zero where it cannot be read, e.g.
// a remote server).
type cpuUse struct {
	Process  time.Duration
	Database time.Duration
	// DatabaseKnown is false when the backends' CPU could not be read.
	DatabaseKnown bool
}

// cpuMeter samples the CPU at the loops' start and just before they stop.
type cpuMeter struct {
	db      *bun.DB // the observer's connection, to list the loops' backends
	process time.Duration
	pg      map[int]time.Duration
	use     cpuUse
}

func (m *cpuMeter) begin(ctx context.Context) {
	m.process = processCPU()
	m.pg, _ = m.backends(ctx)
}

func (m *cpuMeter) end(ctx context.Context) {
	m.use.Process = processCPU() - m.process
	after, err := m.backends(ctx)
	if err != nil || after == nil {
		return
	}
	m.use.DatabaseKnown = true
	for pid, cpu := range after {
		m.use.Database += cpu - m.pg[pid] // a backend that began later began at zero
	}
}

// processCPU is the user and system CPU this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backends is the CPU so far of each PostgreSQL backend serving the
// loops; nil on SQLite or when /proc does not show them.
func (m *cpuMeter) backends(ctx context.Context) (map[int]time.Duration, error) {
	if database.Of(m.db).Name() != database.PostgreSQL {
		return nil, nil
	}
	var pids []int
	if err := m.db.NewRaw("SELECT pid FROM pg_stat_activity WHERE application_name = ?", benchLoopApp).Scan(ctx, &pids); err != nil {
		return nil, fmt.Errorf("list bench backends: %w", err)
	}
	out := map[int]time.Duration{}
	for _, pid := range pids {
		cpu, err := procCPU(pid)
		if err != nil {
			return nil, err
		}
		out[pid] = cpu
	}
	return out, nil
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on Linux.
const clockTick = 10 * time.Millisecond

// procCPU reads utime + stime of a process from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read cpu of %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("read cpu of %d: short stat line", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("read cpu of %d: bad stat line", pid)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// loopURL is the bench target's URL for the loops' connections: on
// PostgreSQL they carry benchLoopApp as their application_name.
func loopURL(target string) string {
	if _, ok := database.SQLitePath(target); ok {
		return target
	}
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
	}
	return target + sep + "application_name=" + benchLoopApp
}

// perFireMicros is d per fire in µs, "-" without fires.
func perFireMicros(d time.Duration, fires int) string {
	if fires == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f µs", float64(d.Microseconds())/float64(fires))
}
