// Command popup-sysctl checks, applies and rolls back the popup service's
// kernel network profiles. See sysctl/README.md; the logic is package sysctl.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"popupsvc/sysctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx)
	stop()
	code, msg := sysctl.ExitStatus(err)
	if msg != "" {
		fmt.Fprintf(os.Stderr, "popup-sysctl: %s\n", msg)
	}
	os.Exit(code)
}

func run(_ context.Context) error { return sysctl.Run(os.Args[1:], os.Stdout) }
