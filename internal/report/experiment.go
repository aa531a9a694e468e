package report

// ExperimentDay is one experiment arm's counts on one day of a phase (docs/CONTRACT.md §10
// "Results"): exposed and clicked users are the users first exposed, or first clicking, that
// day, so an arm's days sum to its totals.
type ExperimentDay struct {
	Day string // YYYY-MM-DD, a day of Zone
	// Zone is the IANA name of the time zone whose day Day is: the zone asked, or "UTC" for a day
	// counted before days followed a zone (migration 00019).
	Zone                                                  string
	Arm                                                   string // a variant's key or popup.ControlArm
	ExposedUsers, Exposures, ClickedUsers, Clicks, Closes int64
}

// GoalCount is one arm's counts of one goal in an experiment phase (popup_experiment_goal).
type GoalCount struct {
	Arm            string
	Goal           string
	ConvertedUsers int64   // exposed users of the arm who converted at least once
	Conversions    int64   // their attributed conversions
	ValueSum       float64 // the sum of the conversions' values
	ValueSqSum     float64 // the sum over users of the square of each user's value
	// ValueSumCapped is the sum over users of min(the user's value, the goal's ValueCap); nil
	// when the goal has no cap.
	ValueSumCapped *float64
}
