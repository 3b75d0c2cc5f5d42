package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/scheduling"
)

// The versions of a schedule (docs/versions.md): list, show one, revert,
// and `schedule diff -f FILE` for drift from a file.

// ErrDrift means `schedule diff` found the namespace different from the
// file; the process exits 2 without more text (the plan is on stdout).
var ErrDrift = errors.New("drift")

var versionFormats = []string{"table", "json"}

func runScheduleVersions(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule versions <id>", "tideline schedule versions daily-sync --show 3 > v3.yaml", e)
	show := c.fs.Int64("show", 0, "print version N's whole definition as `schedule export` writes it (a file apply reads)")
	output := outputFlag(c.fs, append(versionFormats, "yaml")...)
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	if *show < 0 {
		return usagef("invalid --show %d: want a version number, 1 or more", *show)
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	if *show > 0 {
		if err := checkOutput(*output, exportFormats...); err != nil && *output != "table" {
			return err
		}
		v, err := a.ScheduleVersion(ctx, pos[0], *show)
		if err != nil {
			return explain(err)
		}
		docs := []apijson.CreateSchedule{v.Definition}
		if *output == "json" {
			return writeJSON(e.stdout, docs)
		}
		out, err := toYAML(docs)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "# Version %d of %s, recorded %s%s.\n", v.N, v.ScheduleID, scheduling.FormatTime(v.RecordedAt.T()), byWhom(v.Version))
		if len(v.UnrecordedFields) > 0 {
			fmt.Fprintf(e.stdout, "# Not recorded for this version (shown empty): %s.\n", strings.Join(v.UnrecordedFields, ", "))
		}
		_, err = e.stdout.Write(out)
		return err
	}
	if err := checkOutput(*output, versionFormats...); err != nil {
		return err
	}
	list, err := a.ScheduleVersions(ctx, pos[0])
	if err != nil {
		return explain(err)
	}
	if *output == "json" {
		return writeJSON(e.stdout, list)
	}
	t := newTable(e.stdout, "N", "Recorded At", "Source", "Actor", "Changed")
	for _, v := range list.Versions {
		t.row(strconv.FormatInt(v.N, 10), scheduling.FormatTime(v.RecordedAt.T()), orDash(v.Source), orDash(clean(v.Actor)), versionChanges(v))
	}
	return t.flush()
}

// versionChanges is the Changed column: the fields, what a revert went
// back to, and what the stream does not hold.
func versionChanges(v apijson.Version) string {
	text := "(created)"
	if v.N > 1 {
		text = strings.Join(v.ChangedFields, ", ")
	}
	if v.RevertedTo != nil {
		text += fmt.Sprintf(" (revert to %d)", *v.RevertedTo)
	}
	if len(v.UnrecordedFields) > 0 {
		text += fmt.Sprintf(" [not recorded: %s]", strings.Join(v.UnrecordedFields, ", "))
	}
	return text
}

func byWhom(v apijson.Version) string {
	switch {
	case v.Actor != "" && v.Source != "":
		return " by " + clean(v.Actor) + " (" + v.Source + ")"
	case v.Source != "":
		return " (" + v.Source + ")"
	}
	return ""
}

func runScheduleRevert(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule revert <id> <n>", "tideline schedule revert daily-sync 3 --yes --reason 'undo the 09:00 change'", e).withActor()
	yes := c.fs.Bool("yes", false, "revert without asking (scripts); otherwise the plan is printed and confirmed on standard input")
	reason := c.fs.String("reason", "", "why, recorded in the audit stream")
	pos, err := c.parse(args, "<id>", "<n>")
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(pos[1], 10, 64)
	if err != nil || n < 1 {
		return usagef("invalid version %q: want a version number, 1 or more (see 'tideline schedule versions %s')", pos[1], pos[0])
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	plan, err := a.PlanRevertSchedule(ctx, pos[0], n)
	if err != nil {
		return explain(err)
	}
	if len(plan.ChangedFields) == 0 {
		return &codedError{code: scheduling.CodeNoChange, err: fmt.Errorf("schedule %q already matches version %d: a revert would change nothing", pos[0], n)}
	}
	printChanges(e.stdout, fmt.Sprintf("~ revert %s to version %d", pos[0], n), plan.Changes)
	printFireTimes(e.stdout, plan.FireTimesBefore, plan.FireTimesAfter)
	if !*yes {
		fmt.Fprint(e.stdout, "Revert? [y/N] ")
		answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(e.stdout, "\nNot reverted (answer y, or pass --yes).")
			return ErrSilentFailure
		}
	}
	s, err := a.RevertSchedule(ctx, pos[0], n, *reason)
	if err != nil {
		return explain(err)
	}
	fmt.Fprintf(e.stdout, "Reverted %s to version %d; next fire %s.\n", s.ScheduleID, n, apiTimeOrDash(s.NextFireAt))
	return nil
}

// printFireTimes sets the next fire times before and after side by side.
func printFireTimes(w io.Writer, before, after []apijson.Time) {
	t := newTable(w, "Next fires now", "After the revert")
	for i := range max(len(before), len(after)) {
		cell := func(list []apijson.Time) string {
			if i < len(list) {
				return scheduling.FormatTime(list[i].T())
			}
			if i == 0 {
				return "(none: paused)"
			}
			return ""
		}
		t.row(cell(before), cell(after))
	}
	_ = t.flush()
}

func runScheduleDiff(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule diff", "tideline schedule diff -f schedules.yaml || echo 'drifted from the file'", e)
	file := c.fs.String("f", "", "the file of schedules, or - for standard input (required)")
	prune := c.fs.Bool("prune", false, "count schedules (and calendars) managed by apply that the file no longer lists, as apply --prune would delete them")
	if _, err := c.parse(args); err != nil {
		return err
	}
	a, p, err := openPlan(ctx, c, *file, *prune)
	if err != nil {
		return err
	}
	defer a.Close()
	p.print(e.stdout, *prune)
	if len(p.steps) > 0 {
		return ErrDrift
	}
	fmt.Fprintln(e.stdout, "In sync: the namespace matches the file.")
	return nil
}
