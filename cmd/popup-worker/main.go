// Command popup-worker drains the Redis event queue into MySQL in batches and keeps the Redis
// config cache warm; `popup-worker migrate` applies the schema migrations.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	_ "time/tzdata" // results by any IANA time zone, whatever the image carries

	"popupsvc/internal/config"
	"popupsvc/internal/drain"
	"popupsvc/internal/logging"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/workerserver"
)

const usage = `usage: popup-worker [run|migrate]
  run      drain the event queue into MySQL and keep the config cache warm (default)
  migrate  apply the embedded schema migrations (safe to run again)
Configuration: POPUP_* environment variables, see docs/CONFIGURATION.md.`

// envFailpoint arms a crash for tests: "after-commit-before-ack[:probability]" SIGKILLs the process
// after a batch is committed and before it is acknowledged. Never set it in production.
const envFailpoint = "POPUP_WORKER_FAILPOINT"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(os.Stderr, "popup-worker: %s\n%s\n", ue, usage)
		os.Exit(2)
	}
	if err != nil {
		slog.Error("popup-worker stopped", "err", err)
		os.Exit(1)
	}
}

// usageError is a bad command line: main prints the usage and exits 2.
type usageError string

func (e usageError) Error() string { return string(e) }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cmd := "run"
	if len(args) > 0 {
		cmd = args[0]
	}
	if len(args) > 1 {
		return usageError(fmt.Sprintf("unexpected arguments %q", args[1:]))
	}
	switch cmd {
	case "run":
	case "migrate":
	case "help", "-h", "-help", "--help":
		_, err := fmt.Fprintln(stdout, usage)
		return err
	default:
		return usageError(fmt.Sprintf("unknown command %q", cmd))
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := logging.New(cfg.LogLevel)
	slog.SetDefault(log)
	if cmd == "migrate" {
		return migrate(ctx, cfg, stdout)
	}
	failpoint, err := parseFailpoint(os.Getenv(envFailpoint))
	if err != nil {
		return err
	}
	if failpoint != nil {
		log.Warn("failpoint armed: this process will kill itself", envFailpoint, os.Getenv(envFailpoint))
	}
	return workerserver.Run(ctx, cfg, log, workerserver.Hooks{Failpoint: failpoint})
}

// migrate applies pending migrations and says what it did.
func migrate(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	db, err := mysqlstore.Open(ctx, cfg.MySQLDSN, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := mysqlstore.Migrate(ctx, db)
	if err != nil {
		return err
	}
	current, _, err := mysqlstore.SchemaVersions(ctx, db)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		_, err = fmt.Fprintf(stdout, "schema is up to date at version %d\n", current)
		return err
	}
	for _, v := range applied {
		if _, err := fmt.Fprintf(stdout, "applied migration %05d\n", v); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(stdout, "schema is now at version %d\n", current)
	return err
}

// parseFailpoint reads POPUP_WORKER_FAILPOINT: "after-commit-before-ack[:probability]".
func parseFailpoint(spec string) (func(string), error) {
	if spec == "" {
		return nil, nil
	}
	name, p, hasP := strings.Cut(spec, ":")
	prob := 1.0
	if hasP {
		var err error
		if prob, err = strconv.ParseFloat(p, 64); err != nil || prob < 0 || prob > 1 {
			return nil, fmt.Errorf("%s: bad probability %q", envFailpoint, p)
		}
	}
	if name != drain.FailpointAfterCommit {
		return nil, fmt.Errorf("%s: unknown failpoint %q (known: %s)", envFailpoint, name, drain.FailpointAfterCommit)
	}
	return func(point string) {
		if point == name && rand.Float64() < prob {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // SIGKILL is not handled; never continue to the acknowledgement
		}
	}, nil
}
