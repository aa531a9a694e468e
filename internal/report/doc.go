// Package report holds the reporting read models: the rows the results read and show, and their
// pure helpers. A popup's days, locales and totals (Stats, StatsQuery, DayBounds), its
// conversions on the goals (CampaignGoal), an experiment arm's days and goal counts
// (ExperimentDay, GoalCount), the holdout's phases as its history keeps them (HoldoutPhase).
// mysqlstore fills them, internal/experiment/results computes from
// the experiment's, the admin results slice (internal/admin/results) serves them, and the
// worker's sample-ratio check reads an experiment's days.
//
// Why a package of its own rather than internal/popup or the results slice: none of these rows
// is a rule of the publishing or deciding domain (no selection, rule or event folding reads
// them), so the domain does not carry them; and the adapter that fills them must not import an
// HTTP slice, nor internal/experiment/results (whose statistics' tests reach mysqlstore through
// the test stack, an import cycle). This package imports only the domain, for the records it
// carries (a goal, a holdout phase).
package report
