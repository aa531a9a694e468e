package popup

import "time"

// Arm is uid's arm in the popup's experiment (variants first, then the control), or -1 when the
// popup has no running experiment or uid is outside its coverage. The assignment is prepared
// when the popup is compiled, so a popup without an experiment costs one comparison. It does not
// allocate.
func (c *Compiled) Arm(uid string) int {
	if c.assigner == nil {
		return -1
	}
	return c.assigner.Assign(uid)
}

// ApplyExposure records a control exposure at at (docs/CONTRACT.md §10): the user was in the
// control arm of the popup's experiment where an impression would have been, so the popup's
// display rules advance exactly as ApplyImpression's do (hidden for reshow_after_seconds, its
// impression count up, for max_impressions) but the user's daily count does not: nothing was
// shown. Like every transition it only extends hiding. The new state is stored in s and returned.
func (c *Compiled) ApplyExposure(s *UserState, at time.Time) PopupState {
	at = at.UTC()
	st := s.Popups[c.Popup.ID]
	st.NextShowAt = later(st.NextShowAt, hideUntil(at, c.Popup.ReshowAfterSeconds))
	st.Impressions++
	st.LastImpressionAt = later(st.LastImpressionAt, at)
	return s.store(c.Popup.ID, st)
}
