package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/scheduling"
)

// runToken implements `tideline token create`: it prints a new random token
// once, and the entry (holding only the token's hash) for the tokens file.
func runToken(_ context.Context, e env, args []string) error {
	if len(args) == 0 || args[0] != "create" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(e.stdout, "Usage: tideline token create --name NAME --role viewer|operator|admin|worker [--namespace NS]...")
			return ErrHelpShown
		}
		return usagef("usage: tideline token create --name NAME --role viewer|operator|admin|worker [--namespace NS]...")
	}
	fs := newFlagSet("token create", "tideline token create --name ci-bot --role operator --namespace payments", e)
	name := fs.String("name", "", "who the token is for (recorded as the actor in the audit stream)")
	role := fs.String("role", "", "viewer, operator, admin or worker")
	var namespaces stringList
	fs.Var(&namespaces, "namespace", "namespace the token is bound to (repeatable; default: all)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if strings.TrimSpace(*name) == "" {
		return usagef("--name is required")
	}
	if !slices.Contains([]string{auth.RoleViewer, auth.RoleOperator, auth.RoleAdmin, auth.RoleWorker}, *role) {
		return usagef("--role must be viewer, operator, admin or worker")
	}
	for _, ns := range namespaces {
		if ns != "*" && !scheduling.ValidNamespace(ns) {
			return usagef("invalid --namespace %q", ns)
		}
	}
	token, hash, err := auth.NewToken()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Token (shown once; store it in your secret manager):\n  %s\n\n", token)
	fmt.Fprintf(e.stdout, "Add this entry under `principals:` in the tokens file (--tokens-file / TIDELINE_TOKENS):\n")
	fmt.Fprintf(e.stdout, "  - name: %q\n    role: %s\n", *name, *role)
	if len(namespaces) > 0 {
		fmt.Fprintf(e.stdout, "    namespaces: [%s]\n", strings.Join(namespaces, ", "))
	}
	fmt.Fprintf(e.stdout, "    token_sha256: %s\n", hash)
	return nil
}
