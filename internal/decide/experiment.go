package decide

import (
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// actionArms are the experiment arms a click or close a counts for (docs/CONTRACT.md §10): the
// user's arm in its popup's running experiment, and every control its decision id names that fell
// through on the way to this popup: that popup's experiment is running with mode fall_through and
// assigns this user to the control the suffix names. A suffix that says otherwise (forged, or from
// an older phase) is ignored. Nil for a popup outside any experiment; it then does not allocate.
func actionArms(snap *snapshot.Snapshot, entry *snapshot.Entry, a Report) []event.ArmRef {
	var arms []event.ArmRef
	if i := entry.Arm(a.UID); i >= 0 {
		arms = entry.ArmRefs[i][:1:1] // shared: appending below must copy it
	}
	armSuffixes(a.DecisionID, event.MaxArmRefs, func(x int64, i int) {
		if x == a.PopupID || len(arms) == event.MaxArmRefs {
			return
		}
		if xe := snap.Entry(x); xe != nil && xe.Arm(a.UID) == i {
			if e := xe.Popup.Experiment; e.IsControl(i) && e.Control.Mode == popup.ControlFallThrough {
				for _, r := range arms {
					if r.PopupID == x {
						return // named twice
					}
				}
				arms = append(arms, xe.ArmRefs[i]...)
			}
		}
	})
	return arms
}
