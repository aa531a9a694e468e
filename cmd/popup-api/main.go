// Command popup-api serves the homepage popup decision, the action endpoint and the admin API.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"popupsvc/internal/apiserver"
	"popupsvc/internal/config"
	"popupsvc/internal/logging"
)

func main() {
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
