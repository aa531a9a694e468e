package popup

// ExperimentDay is one experiment arm's counts on one UTC day of a phase (popup_experiment_daily,
// docs/CONTRACT.md §10 "Results"): exposed and clicked users are the users first exposed, or
// first clicking, that day, so an arm's days sum to its totals.
type ExperimentDay struct {
	Day                                                   string // YYYY-MM-DD, UTC
	Arm                                                   string // a variant's key or ControlArm
	ExposedUsers, Exposures, ClickedUsers, Clicks, Closes int64
}
