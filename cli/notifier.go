package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/notify"
	"github.com/tidelinehq/tideline/scheduling"
)

func notifierCommands() map[string]subcommand {
	return map[string]subcommand{
		"add":        {"create a notifier (prints its signing secret once)", runNotifierAdd},
		"list":       {"list the namespace's notifiers", runNotifierList},
		"remove":     {"delete a notifier and its delivery log", runNotifierRemove},
		"test":       {"post a test event to a notifier now and show the result", runNotifierTest},
		"deliveries": {"show a notifier's delivery log, newest first", runNotifierDeliveries},
		"redeliver":  {"send a notifier's dead deliveries (or one, --delivery ID) again", runNotifierRedeliver},
	}
}

// runNotifier dispatches `tideline notifier <verb>`.
func runNotifier(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "notifier", notifierCommands(), args)
}

// newNotifierCommand is a dbCommand whose direct mode posts like serve
// would: the same environment decides private targets and console links.
func newNotifierCommand(name, example string, e env) *dbCommand {
	c := newDBCommand(name, example, e)
	c.cfg.Notify = scheduling.NotifyConfig{
		AllowPrivate: e.getenv("TIDELINE_ALLOW_PRIVATE_NOTIFIERS") == "1",
		PublicURL:    e.getenv("TIDELINE_PUBLIC_URL"),
	}
	return c
}

func runNotifierAdd(ctx context.Context, e env, args []string) error {
	c := newNotifierCommand("notifier add <name>",
		"tideline notifier add ops --url https://hooks.slack.com/services/… --format slack --event run_failed --event fire_late --selector team=billing", e)
	url := c.fs.String("url", "", "where events are posted (http or https)")
	format := c.fs.String("format", notify.FormatJSON, "json (the versioned event document) or slack (incoming-webhook text)")
	var events stringList
	c.fs.Var(&events, "event", "event to send (repeatable): "+strings.Join(notify.Events, ", ")+"; or all")
	var selector pairList
	c.fs.Var(&selector, "selector", "only schedules with this label, key=value (repeatable; all must match)")
	secret := c.fs.String("secret", "", "signing secret (16-256 characters); generated when omitted")
	output := outputFlag(c.fs, describeFormats...)
	pos, err := c.parse(args, "<name>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, describeFormats...); err != nil {
		return err
	}
	if *url == "" {
		return usagef("missing --url")
	}
	if len(events) == 0 {
		return usagef("missing --event (one of %s, or all)", strings.Join(notify.Events, ", "))
	}
	if len(events) == 1 && events[0] == "all" {
		events = notify.Events
	}
	sel, err := selector.toMap("selector")
	if err != nil {
		return err
	}
	req := apijson.NotifierWrite{Name: pos[0], URL: url, Format: format, Events: events, LabelSelector: sel}
	if *secret != "" {
		req.Secret = secret
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	n, err := a.CreateNotifier(ctx, req)
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, n)
	}
	fmt.Fprintf(e.stdout, "Created notifier %s (%s) in namespace %s: %s\n", n.Name, n.Format, n.Namespace, strings.Join(n.Events, ", "))
	fmt.Fprintf(e.stdout, "Signing secret (shown once; verify Tideline-Signature with it): %s\n", n.Secret)
	return nil
}

func runNotifierList(ctx context.Context, e env, args []string) error {
	c := newNotifierCommand("notifier list", "tideline notifier list --output json", e)
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
	list, err := a.ListNotifiers(ctx)
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, list.Notifiers)
	}
	if len(list.Notifiers) == 0 {
		fmt.Fprintln(e.stdout, "No notifiers.")
		return nil
	}
	t := newTable(e.stdout, "Name", "Format", "Health", "Pending", "Dead", "Events", "Selector", "URL")
	for _, n := range list.Notifiers {
		t.row(n.Name, n.Format, healthText(n.Health), countText(n.Health, false), countText(n.Health, true),
			strings.Join(n.Events, ","), orDash(clean(pairsSummary(n.LabelSelector))), clean(n.URL))
	}
	return t.flush()
}

// healthText is a notifier's health in a table: "ok", "idle" or "failing
// since TIME".
func healthText(h *apijson.NotifierHealth) string {
	switch {
	case h == nil:
		return "-"
	case h.FailingSince != nil:
		return "failing since " + scheduling.FormatTime(h.FailingSince.T())
	}
	return h.State
}

func countText(h *apijson.NotifierHealth, dead bool) string {
	switch {
	case h == nil:
		return "-"
	case dead:
		return strconv.FormatInt(h.Dead, 10)
	}
	return strconv.FormatInt(h.Pending, 10)
}

func runNotifierRedeliver(ctx context.Context, e env, args []string) error {
	c := newNotifierCommand("notifier redeliver <name>", "tideline notifier redeliver ops --reason 'receiver fixed'", e)
	delivery := c.fs.String("delivery", "", "only this dead delivery (its ID, from notifier deliveries)")
	reason := c.fs.String("reason", "", "why, recorded in the notifier's history")
	pos, err := c.parse(args, "<name>")
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	if *delivery != "" {
		d, err := a.Redeliver(ctx, pos[0], *delivery, *reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "Delivery %s of %s is pending again.\n", d.ID, pos[0])
		return nil
	}
	res, err := a.RedeliverDead(ctx, pos[0], *reason)
	if err != nil {
		return err
	}
	word := "deliveries"
	if res.Redelivered == 1 {
		word = "delivery"
	}
	fmt.Fprintf(e.stdout, "Sent %d dead %s of %s again.\n", res.Redelivered, word, pos[0])
	if res.More {
		fmt.Fprintf(e.stdout, "More are dead; run the command again for the next %d.\n", scheduling.MaxRedeliver)
	}
	return nil
}

func runNotifierRemove(ctx context.Context, e env, args []string) error {
	c := newNotifierCommand("notifier remove <name>", "tideline notifier remove ops", e)
	pos, err := c.parse(args, "<name>")
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.DeleteNotifier(ctx, pos[0]); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Removed notifier %s and its delivery log.\n", pos[0])
	return nil
}

func runNotifierTest(ctx context.Context, e env, args []string) error {
	c := newNotifierCommand("notifier test <name>", "tideline notifier test ops", e)
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
	d, err := a.TestNotifier(ctx, pos[0])
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, d)
	}
	if d.Status == "delivered" {
		fmt.Fprintf(e.stdout, "Delivered a test event to %s (HTTP %s, delivery %s).\n", pos[0], statusText(d.LastStatusCode), d.ID)
		return nil
	}
	return fmt.Errorf("test event to %s failed (HTTP %s, delivery %s): %s", pos[0], statusText(d.LastStatusCode), d.ID, strOrDash(d.LastError))
}

func runNotifierDeliveries(ctx context.Context, e env, args []string) error {
	c := newNotifierCommand("notifier deliveries <name>", "tideline notifier deliveries ops --limit 20", e)
	limit := c.fs.Int("limit", 50, "deliveries to show, 1-200")
	output := outputFlag(c.fs, "table", "json")
	pos, err := c.parse(args, "<name>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, "table", "json"); err != nil {
		return err
	}
	if *limit < 1 || *limit > scheduling.MaxListLimit {
		return usagef("invalid --limit %d: want 1-%d", *limit, scheduling.MaxListLimit)
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	page, err := a.NotifierDeliveriesPage(ctx, pos[0], *limit, "")
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, page.Deliveries)
	}
	if len(page.Deliveries) == 0 {
		fmt.Fprintln(e.stdout, "No deliveries.")
		return nil
	}
	t := newTable(e.stdout, "Delivery ID", "Event", "Status", "Attempts", "HTTP", "Schedule", "Created At", "Last Error")
	for _, d := range page.Deliveries {
		t.row(d.ID, d.Event, d.Status, strconv.Itoa(d.Attempts), statusText(d.LastStatusCode), strOrDash(d.ScheduleID),
			scheduling.FormatTime(d.CreatedAt.T()), clean(strOrDash(d.LastError)))
	}
	return t.flush()
}

func statusText(code *int) string {
	if code == nil {
		return "-"
	}
	return strconv.Itoa(*code)
}
