// Package admin puts the admin API's features together: one package a feature under
// internal/admin, each a room of its own with its Register function (its routes and their role
// guards), the ports it consumes (small interfaces, declared where they are used), its wire
// types, its read service, and its tests beside it. New wires them into the slices the shell
// (httpapi.Admin: auth, the operators, the error table, metrics, pprof) registers.
//
// Why packages rather than one receiver per feature in httpapi: a feature's names are its own
// (no prefixes to tell audiences' wire types from goals'), a feature cannot reach into another's
// state by accident, a new route edits its slice and not a shared file, and go test runs every
// slice as a package of its own, in parallel. What the slices share is small and stable: the kit
// in httpapi (errors, body and query readers, the operator and role guards) and httpapi.Shared
// (the logger, the clock, the propagation of a config change).
//
// The slices: popups (writes, list, history, audit, import and export, translations, previews),
// results (stats, experiment and holdout results, campaign conversions), audiences, goals,
// settings (reporting time zone, pacing, holdout percentage), users (a user's state, erasure,
// export) and ingestkeys. The operators and their roles belong to the shell, which owns the
// tokens.
package admin
