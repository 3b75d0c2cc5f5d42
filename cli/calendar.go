package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
)

func calendarCommands() map[string]subcommand {
	return map[string]subcommand{
		"list":     {"list the namespace's calendars", runCalendarList},
		"add":      {"create a calendar of dates schedules can exclude", runCalendarAdd},
		"describe": {"show a calendar, its dates and the schedules using it", runCalendarDescribe},
		"update":   {"change a calendar; re-plans every schedule using it", runCalendarUpdate},
		"remove":   {"delete a calendar no schedule uses", runCalendarRemove},
		"import":   {"create or replace a calendar's dates from the all-day events of an .ics file", runCalendarImport},
	}
}

// runCalendar dispatches `tideline calendar <verb>`.
func runCalendar(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "calendar", calendarCommands(), args)
}

// calendarFlags are the fields add and update share.
type calendarFlags struct {
	dates       stringList
	datesFile   *string
	weekend     *string
	description *string
}

func bindCalendarFlags(c *dbCommand) *calendarFlags {
	f := &calendarFlags{}
	c.fs.Var(&f.dates, "date", "a date the calendar lists, YYYY-MM-DD (repeatable)")
	f.datesFile = c.fs.String("dates-file", "", "a file of dates, one YYYY-MM-DD a line (# comments and blank lines ignored)")
	f.weekend = c.fs.String("weekend", "", `weekend days for business-day moves, e.g. "sat,sun" (the default on add) or "fri,sat"; "none" for no weekend`)
	f.description = c.fs.String("description", "", "what the calendar holds")
	return f
}

// write turns the flags into a request; set reports which flags were given.
func (f *calendarFlags) write(c *dbCommand) (apijson.CalendarWrite, error) {
	var w apijson.CalendarWrite
	set := map[string]bool{}
	c.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["description"] {
		w.Description = f.description
	}
	if set["date"] || set["dates-file"] {
		w.Dates = append([]string{}, f.dates...)
		if *f.datesFile != "" {
			more, err := readDatesFile(*f.datesFile)
			if err != nil {
				return w, err
			}
			w.Dates = append(w.Dates, more...)
		}
	}
	if set["weekend"] {
		w.Weekend = weekendFlag(*f.weekend)
	}
	return w, nil
}

// weekendFlag reads --weekend: "sat,sun", or "none" (or empty) for none.
func weekendFlag(s string) []string {
	out := []string{}
	if s = strings.TrimSpace(s); s != "" && s != "none" {
		for _, d := range strings.Split(s, ",") {
			out = append(out, strings.TrimSpace(d))
		}
	}
	return out
}

// readDatesFile reads one date a line, bounded; errors name the line.
func readDatesFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("invalid --dates-file: %v", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, why := timespec.ParseDate(line); why != "" {
			return nil, usagef("invalid --dates-file %s line %d: %s", path, n, why)
		}
		out = append(out, line)
		if len(out) > timespec.MaxCalendarDates {
			return nil, usagef("invalid --dates-file %s: more than %d dates", path, timespec.MaxCalendarDates)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, usagef("invalid --dates-file %s: %v", path, err)
	}
	return out, nil
}

func runCalendarAdd(ctx context.Context, e env, args []string) error {
	c := newDBCommand("calendar add <name>", "tideline calendar add us-bank-holidays --date 2026-12-25 --date 2027-01-01 --weekend sat,sun --description 'US bank holidays'", e)
	f := bindCalendarFlags(c)
	output := outputFlag(c.fs, describeFormats...)
	pos, err := c.parse(args, "<name>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, describeFormats...); err != nil {
		return err
	}
	w, err := f.write(c)
	if err != nil {
		return err
	}
	w.Name = pos[0]
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	cal, err := a.CreateCalendar(ctx, w)
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, cal)
	}
	fmt.Fprintf(e.stdout, "Created calendar %s in namespace %s: %d dates, weekend %s.\n", cal.Name, cal.Namespace, len(cal.Dates), weekendText(cal.Weekend))
	return nil
}

func runCalendarUpdate(ctx context.Context, e env, args []string) error {
	c := newDBCommand("calendar update <name>", "tideline calendar update us-bank-holidays --dates-file holidays.txt", e)
	f := bindCalendarFlags(c)
	output := outputFlag(c.fs, describeFormats...)
	pos, err := c.parse(args, "<name>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, describeFormats...); err != nil {
		return err
	}
	w, err := f.write(c)
	if err != nil {
		return err
	}
	if w.Description == nil && w.Dates == nil && w.Weekend == nil {
		return usagef("nothing to change: give --date, --dates-file, --weekend or --description")
	}
	return updateCalendar(ctx, e, c, pos[0], w, *output)
}

func updateCalendar(ctx context.Context, e env, c *dbCommand, name string, w apijson.CalendarWrite, output string) error {
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	ch, err := a.UpdateCalendar(ctx, name, w)
	if err != nil {
		return err
	}
	if output == "json" {
		return writeJSON(e.stdout, ch)
	}
	printCalendarChange(e, ch)
	return nil
}

func printCalendarChange(e env, ch *apijson.CalendarChange) {
	fmt.Fprintf(e.stdout, "Updated calendar %s: %d dates, weekend %s (version %d).\n", ch.Calendar.Name, len(ch.Calendar.Dates), weekendText(ch.Calendar.Weekend), ch.Calendar.Version)
	if len(ch.Replanned) == 0 {
		fmt.Fprintln(e.stdout, "No schedule's next fire changed.")
		return
	}
	fmt.Fprintf(e.stdout, "Re-planned %s:\n", plural(len(ch.Replanned), "schedule"))
	for _, r := range ch.Replanned {
		fmt.Fprintf(e.stdout, "  %s: %s -> %s\n", r.ScheduleID, timeOrNever(r.From), timeOrNever(r.To))
	}
}

func timeOrNever(t *apijson.Time) string {
	if t == nil {
		return "never"
	}
	return scheduling.FormatTime(t.T())
}

func weekendText(days []string) string {
	if len(days) == 0 {
		return "none"
	}
	return strings.Join(days, ",")
}

func runCalendarList(ctx context.Context, e env, args []string) error {
	c := newDBCommand("calendar list", "tideline calendar list --output json", e)
	output := outputFlag(c.fs, "table", "json")
	if _, err := c.parse(args); err != nil {
		return err
	}
	if err := checkOutput(*output, "table", "json"); err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	var all []apijson.CalendarSummary
	cursor := ""
	for {
		page, err := a.ListCalendarsPage(ctx, scheduling.MaxListLimit, cursor)
		if err != nil {
			return err
		}
		all = append(all, page.Calendars...)
		if !page.HasMore || page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if *output == "json" {
		if all == nil {
			all = []apijson.CalendarSummary{}
		}
		return writeJSON(e.stdout, all)
	}
	if len(all) == 0 {
		fmt.Fprintln(e.stdout, "No calendars.")
		return nil
	}
	t := newTable(e.stdout, "Name", "Dates", "First", "Last", "Weekend", "Description")
	for _, cal := range all {
		t.row(cal.Name, strconv.Itoa(cal.DateCount), strOrDash(cal.FirstDate), strOrDash(cal.LastDate), weekendText(cal.Weekend), orDash(clean(cal.Description)))
	}
	return t.flush()
}

func runCalendarDescribe(ctx context.Context, e env, args []string) error {
	c := newDBCommand("calendar describe <name>", "tideline calendar describe us-bank-holidays", e)
	output := outputFlag(c.fs, describeFormats...)
	pos, err := c.parse(args, "<name>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, describeFormats...); err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	cal, err := a.GetCalendar(ctx, pos[0])
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, cal)
	}
	fmt.Fprintf(e.stdout, "Calendar:    %s\n", cal.Name)
	fmt.Fprintf(e.stdout, "Namespace:   %s\n", cal.Namespace)
	fmt.Fprintf(e.stdout, "Description: %s\n", orDash(clean(cal.Description)))
	fmt.Fprintf(e.stdout, "Weekend:     %s\n", weekendText(cal.Weekend))
	fmt.Fprintf(e.stdout, "Version:     %d (updated %s)\n", cal.Version, cal.UpdatedAt)
	fmt.Fprintf(e.stdout, "Used by:     %s\n", orDash(strings.Join(cal.UsedBy, ", ")))
	if cal.ManagedBy != "" {
		fmt.Fprintf(e.stdout, "Managed by:  %s (change the schedules file, not the calendar)\n", cal.ManagedBy)
	}
	fmt.Fprintf(e.stdout, "Dates (%d):\n", len(cal.Dates))
	for _, d := range cal.Dates {
		fmt.Fprintf(e.stdout, "  %s\n", d)
	}
	return nil
}

func runCalendarRemove(ctx context.Context, e env, args []string) error {
	c := newDBCommand("calendar remove <name>", "tideline calendar remove us-bank-holidays", e)
	pos, err := c.parse(args, "<name>")
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.DeleteCalendar(ctx, pos[0]); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Removed calendar %s.\n", pos[0])
	return nil
}

func runCalendarImport(ctx context.Context, e env, args []string) error {
	c := newDBCommand("calendar import <name> <file.ics>", "tideline calendar import us-bank-holidays holidays.ics --description 'US bank holidays'", e)
	weekend := c.fs.String("weekend", "", `weekend days on create (default "sat,sun"), or to set on update`)
	description := c.fs.String("description", "", "what the calendar holds")
	output := outputFlag(c.fs, describeFormats...)
	pos, err := c.parse(args, "<name>", "<file.ics>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, describeFormats...); err != nil {
		return err
	}
	f, err := os.Open(pos[1])
	if err != nil {
		return usagef("cannot read %s: %v", pos[1], err)
	}
	dates, skipped, err := timespec.ParseICalDates(f)
	f.Close()
	if err != nil {
		return usagef("invalid %s: %v", pos[1], err)
	}
	w := apijson.CalendarWrite{Dates: dates}
	set := map[string]bool{}
	c.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["description"] {
		w.Description = description
	}
	if set["weekend"] {
		w.Weekend = weekendFlag(*weekend)
	}
	if skipped > 0 {
		fmt.Fprintf(e.stderr, "Skipped %d timed event(s): a calendar holds whole days.\n", skipped)
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	if _, err := a.GetCalendar(ctx, pos[0]); err == nil {
		ch, err := a.UpdateCalendar(ctx, pos[0], w)
		if err != nil {
			return err
		}
		if *output == "json" {
			return writeJSON(e.stdout, ch)
		}
		printCalendarChange(e, ch)
		return nil
	} else if !isCalendarNotFound(err) {
		return err
	}
	w.Name = pos[0]
	cal, err := a.CreateCalendar(ctx, w)
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, cal)
	}
	fmt.Fprintf(e.stdout, "Created calendar %s in namespace %s from %s: %d dates, weekend %s.\n", cal.Name, cal.Namespace, pos[1], len(cal.Dates), weekendText(cal.Weekend))
	return nil
}

// isCalendarNotFound matches both backends' "no such calendar".
func isCalendarNotFound(err error) bool {
	var nf *scheduling.NotFoundError
	if errors.As(err, &nf) {
		return nf.Code == scheduling.CodeCalendarNotFound
	}
	var ce *client.Error
	return errors.As(err, &ce) && ce.Code == scheduling.CodeCalendarNotFound
}
