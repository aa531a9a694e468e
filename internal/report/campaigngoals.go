package report

import "popupsvc/internal/popup"

// CampaignGoal is a popup's conversions on one goal over a range of conversion times
// (docs/CONTRACT.md §8 "Conversions"): each conversion counts for every popup the user was shown
// within the goal's window before it (Shown), and, beside, for every popup the user clicked
// within the window before it (Clicked, a part of Shown).
type CampaignGoal struct {
	Goal    popup.Goal
	Shown   CampaignConversions
	Clicked CampaignConversions
}

// CampaignConversions are the conversions attributed one way: the users who converted, their
// conversions, and the sum of their values (0 for a goal without values).
type CampaignConversions struct {
	ConvertedUsers int64
	Conversions    int64
	ValueSum       float64
	// ValueSumCapped is the sum over the users of min(the user's value, the goal's ValueCap),
	// a user's value being the sum of their conversions' values counted here; nil without a cap.
	ValueSumCapped *float64
}
