package runner

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// The shim closes the one gap Pdeathsig leaves: Linux signals only the
// direct child of a process that dies, so what a command starts itself (sh
// -c 'a; b' runs a as a grandchild) would outlive a worker killed with
// SIGKILL. With the shim, the worker starts its own executable in shim mode
// as the leader of the command's process group; the shim starts the command
// in that group and holds the read end of a "lifeline" pipe whose write end
// only the worker holds. When the worker dies, however it dies, the kernel
// closes that end, the shim reads EOF and kills the whole group.
//
// A binary has the shim only when its main calls ShimMain first; the
// runner uses it only then (a test binary that does not would otherwise run
// its tests again when started as a shim).

// shimArg marks a shim invocation: argv is [exe, shimArg, path, argv…].
const shimArg = "__tideline-command-shim__"

// The shim's extra files: the lifeline (read end) and the status pipe it
// reports the command's wait status on.
const (
	shimLifelineFD = 3
	shimStatusFD   = 4
)

// shimReady records that this executable's main dispatches shim
// invocations: a property of the binary, so process-wide.
var shimReady atomic.Bool

// ShimMain must be called first in main: in a shim invocation it runs the
// command and exits; otherwise it returns and lets the runner use the shim.
func ShimMain() {
	if len(os.Args) >= 4 && os.Args[1] == shimArg {
		os.Exit(runShim(os.Args[2], os.Args[3:]))
	}
	shimReady.Store(true)
}

// shimPath is the executable to start as a shim, or "" when there is none.
func shimPath() string {
	if !shimReady.Load() {
		return ""
	}
	// The running binary itself, even when an upgrade replaced or deleted
	// the file it was started from.
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}

// runShim runs the command in this process's group and reports how it
// ended on the status pipe; the exit code only says whether it could.
func runShim(path string, argv []string) int {
	lifeline := os.NewFile(shimLifelineFD, "lifeline")
	status := os.NewFile(shimStatusFD, "status")
	if lifeline == nil || status == nil {
		fmt.Fprintln(os.Stderr, "tideline command shim: started without its pipes")
		return 125
	}
	// Neither pipe is the command's business.
	syscall.CloseOnExec(shimLifelineFD)
	syscall.CloseOnExec(shimStatusFD)
	// The worker signals the whole group; the command decides what SIGTERM
	// means, the shim waits for it. Notify, not Ignore: an ignored signal
	// would stay ignored in the command.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		_, _ = io.Copy(io.Discard, lifeline)
		// EOF: the worker is gone. Take the group down, this shim included.
		_ = syscall.Kill(0, syscall.SIGKILL)
	}()
	cmd := &exec.Cmd{Path: path, Args: argv, Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(status, "start %s\n", err)
		return 0
	}
	_ = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		fmt.Fprintf(status, "signal %d\n", int(ws.Signal()))
	} else {
		fmt.Fprintf(status, "exit %d\n", ws.ExitStatus())
	}
	return 0
}

// shimStatus reads what the shim reported: the command's exit code or
// signal, or why it could not start it. ok is false when the shim said
// nothing (it was killed with its group).
func shimStatus(report string) (code int, sig syscall.Signal, startErr string, ok bool) {
	kind, value, found := strings.Cut(strings.TrimSpace(report), " ")
	if !found {
		return 0, 0, "", false
	}
	switch kind {
	case "start":
		return 0, 0, value, true
	case "exit", "signal":
		n, err := strconv.Atoi(value)
		if err != nil {
			return 0, 0, "", false
		}
		if kind == "signal" {
			return -1, syscall.Signal(n), "", true
		}
		return n, 0, "", true
	}
	return 0, 0, "", false
}
