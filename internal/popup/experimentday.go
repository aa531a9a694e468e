package popup

// ExperimentDay is one experiment arm's counts on one day of a phase (docs/CONTRACT.md §10
// "Results"): exposed and clicked users are the users first exposed, or first clicking, that
// day, so an arm's days sum to its totals.
type ExperimentDay struct {
	Day string // YYYY-MM-DD, a day of Zone
	// Zone is the IANA name of the time zone whose day Day is: the zone asked, or "UTC" for a day
	// counted before days followed a zone (migration 00019).
	Zone                                                  string
	Arm                                                   string // a variant's key or ControlArm
	ExposedUsers, Exposures, ClickedUsers, Clicks, Closes int64
}
