// Command popup-api serves the homepage popup decision, the action endpoint and the admin API.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	_ "time/tzdata" // results by any IANA time zone, whatever the image carries

	"popupsvc/internal/apiserver"
	"popupsvc/internal/config"
	"popupsvc/internal/logging"
)

// gcPercent is popup-api's GOGC unless the environment sets one. Its live heap is small (the
// config snapshot) and its garbage is per request, so collecting a quarter as often costs little
// memory (about 10 MiB of RSS in the soak) and bought 9-31% more requests per API CPU-second in
// ten A/B pairs, with 20 and with 10,000 configs (`scripts/bench-ab.sh GOGC "100 400"`,
// docs/PERFORMANCE.md). Where memory is capped, set GOMEMLIMIT as well (docs/DEPLOY.md): the
// collector then runs sooner near the limit.
const gcPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	if err := run(); err != nil {
		slog.Error("popup-api stopped", "err", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := logging.New(cfg.LogLevel)
	slog.SetDefault(log)
	log.Info("popup-api starting", "config", cfg.String())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return apiserver.Run(ctx, cfg, log, apiserver.Hooks{})
}
