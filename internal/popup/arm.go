package popup

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
