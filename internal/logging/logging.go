// Package logging builds the JSON slog logger both binaries use.
package logging

import (
	"log/slog"
	"os"
)

// New returns a JSON logger on stderr at level (debug, info, warn, error).
func New(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}
