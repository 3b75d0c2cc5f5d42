package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Output bounds (SPEC §15): what the server is told about one command.
const (
	// stdoutKept is how much of stdout is held: a JSON document up to this
	// size is the run's output as it is.
	stdoutKept = 256 << 10
	// stdoutTail is how much of a stdout that is not JSON the output keeps.
	stdoutTail = 64 << 10
	// stderrTail is how much of stderr a failure's message keeps.
	stderrTail = 4 << 10
)

// pipeDrain bounds the wait for a command's output after its process
// group is gone: only a process that left the group (setsid) can still
// hold the pipes, and it must not hold the run.
const pipeDrain = 2 * time.Second

// exitStatus is how a command ended.
type exitStatus struct {
	code   int            // exit code, when it exited
	signal syscall.Signal // the signal that killed it, else 0
	stdout *tail
	stderr *tail
}

// stopMode is how a running command is stopped when its context ends.
type stopMode int

const (
	stopGently stopMode = iota // SIGTERM to the group, SIGKILL after the grace
	stopNow                    // SIGKILL to the group at once
)

// process runs one command to its end: input on stdin, stdout and stderr
// kept in bounded tails. The command leads a process group of its own, so
// that a signal reaches everything it started, and Pdeathsig kills it when
// this process dies without a chance to clean up (SIGKILL, OOM killer); in a
// binary with the shim (shim.go) the shim leads the group and takes all of
// it down then, grandchildren included.
// When ctx ends the group is stopped as mode(cause) says.
type process struct {
	path  string
	argv  []string
	env   []string
	input []byte
	grace time.Duration
	mode  func(cause error) stopMode
}

func (p *process) run(ctx context.Context) (exitStatus, error) {
	st := exitStatus{stdout: newTail(stdoutKept), stderr: newTail(stderrTail)}
	inR, inW, err := os.Pipe()
	if err != nil {
		return st, fmt.Errorf("create stdin pipe: %w", err)
	}
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		return st, fmt.Errorf("create stdout pipe: %w", err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		outW.Close()
		return st, fmt.Errorf("create stderr pipe: %w", err)
	}
	defer errR.Close()

	// Files, not writers: exec then starts no copying goroutines of its own,
	// so Wait returns when the command exits even if a grandchild still
	// holds a pipe.
	cmd := &exec.Cmd{Path: p.path, Args: p.argv, Env: p.env, Stdin: inR, Stdout: outW, Stderr: errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	var statusR *os.File
	if shim := shimPath(); shim != "" {
		// The shim leads the group and runs the command in it (shim.go).
		lifeR, lifeW, err := os.Pipe()
		if err != nil {
			inR.Close()
			outW.Close()
			errW.Close()
			return st, fmt.Errorf("create lifeline pipe: %w", err)
		}
		defer lifeW.Close() // held until the command has ended: its close is the worker's death
		var statusW *os.File
		statusR, statusW, err = os.Pipe()
		if err != nil {
			lifeR.Close()
			inR.Close()
			outW.Close()
			errW.Close()
			return st, fmt.Errorf("create status pipe: %w", err)
		}
		defer statusR.Close()
		cmd.Path, cmd.Args = shim, append([]string{"tideline", shimArg, p.path}, p.argv...)
		cmd.ExtraFiles = []*os.File{lifeR, statusW}
		// No Pdeathsig for the shim: it must outlive this process long
		// enough to kill the group when the lifeline closes.
		cmd.SysProcAttr.Pdeathsig = 0
	}

	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		// Pdeathsig fires when the thread that started the child ends, not
		// the process (go.dev/issue/27505): this goroutine keeps its thread
		// until the child has exited.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err != nil {
			return
		}
		waitExited(cmd.Process.Pid)
		close(exited)
	}()
	err = <-started
	inR.Close()
	outW.Close()
	errW.Close()
	for _, f := range cmd.ExtraFiles {
		f.Close() // the shim's ends
	}
	if err != nil {
		return st, fmt.Errorf("start %s: %w", p.path, err)
	}
	pgid := cmd.Process.Pid
	report := make(chan string, 1)
	if statusR != nil {
		go func() {
			b, _ := io.ReadAll(io.LimitReader(statusR, 4<<10))
			report <- string(b)
		}()
	}

	var copies sync.WaitGroup
	copies.Go(func() { _, _ = io.Copy(st.stdout, outR) })
	copies.Go(func() { _, _ = io.Copy(st.stderr, errR) })
	go func() {
		// A command that never reads its stdin ends this write with EPIPE.
		_, _ = inW.Write(p.input)
		_ = inW.Close()
	}()

	select {
	case <-exited:
	case <-ctx.Done():
		p.stop(pgid, p.mode(context.Cause(ctx)), exited)
	}
	// The run is over when its command is: whatever it left running in its
	// group goes too, so nothing of this attempt outlives it (the next
	// attempt may start elsewhere). The group is still ours to signal: the
	// command is not reaped yet, so its ID cannot have been reused.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitErr := cmd.Wait()

	drained := make(chan struct{})
	go func() {
		copies.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(pipeDrain):
		outR.Close()
		errR.Close()
		<-drained
	}

	if statusR != nil {
		// The shim's word, when it had its say, is the command's end; a
		// shim killed with its group said nothing and ended as the command.
		code, sig, startErr, ok := shimStatus(<-report)
		switch {
		case ok && startErr != "":
			return st, fmt.Errorf("start %s: %s", p.path, startErr)
		case ok:
			st.code, st.signal = code, sig
			return st, nil
		}
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return st, fmt.Errorf("wait for %s: %w", p.path, waitErr)
	case ws.Signaled():
		st.signal = ws.Signal()
		st.code = -1
	default:
		st.code = ws.ExitStatus()
	}
	return st, nil
}

// stop signals the command's whole group and waits until the command exits.
func (p *process) stop(pgid int, mode stopMode, exited <-chan struct{}) {
	if mode == stopGently {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(p.grace)
		defer t.Stop()
		select {
		case <-exited:
			return
		case <-t.C:
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
}

// waitExited blocks until the process has exited, leaving it a zombie
// (WNOWAIT) so that its process group ID stays reserved until Wait reaps it.
func waitExited(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
