package decide_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/testenv"
)

const salt = "3f9a0c2b7d1e4a65"

// experiment is a running experiment, variants a (50) and b (30) and a control (20) of mode.
func experiment(mode popup.ControlMode) *popup.Experiment {
	return &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Phase: 1, Salt: salt,
		Variants: []popup.Variant{
			{Key: "a", Weight: 50, Creative: popup.Creative{Title: "variant a"}},
			{Key: "b", Weight: 30, Creative: popup.Creative{Title: "variant b"}},
		},
		Control: &popup.Control{Weight: 20, Mode: mode}}
}

const controlArm = 2 // experiment's arms: a, b, control

// withExp gives a popup e.
func withExp(e *popup.Experiment) func(*popup.Popup) {
	return func(p *popup.Popup) { p.Experiment = e }
}

// uidIn is a uid that e assigns to arm.
func uidIn(t *testing.T, e *popup.Experiment, arm int) string {
	t.Helper()
	a := popup.NewAssigner(e)
	for i := range 10_000 {
		if uid := "user-" + strconv.Itoa(i); a.Assign(uid) == arm {
			return uid
		}
	}
	t.Fatalf("no uid in arm %d", arm)
	return ""
}

// emptyLoader is a durable store without any state: every user is new.
type emptyLoader struct{}

func (emptyLoader) Load(context.Context, string, time.Time) (popup.UserState, error) {
	return popup.UserState{}, nil
}

// redisFixture is a Decider on the real Redis user store.
type redisFixture struct {
	d     *decide.Decider
	users *redisstore.UserStore
	keys  redisstore.Keys
	t     *testing.T
}

func newRedisFixture(t *testing.T, popups ...popup.Popup) *redisFixture {
	t.Helper()
	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(t), Shards: 1}
	users := redisstore.NewUserStore(testenv.Redis(t), keys, time.Hour, emptyLoader{}, 4, nil)
	holder := &snapshot.Holder{}
	s := snapshot.BuildWith(1, popups, t0, popup.LinkSchemes{}, nil)
	require.Empty(t, s.Problems)
	holder.Store(s)
	d := &decide.Decider{Snapshots: holder, Users: users, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: 5 * time.Second,
		Local: decide.NewLocalAnswers(1000), Metrics: decide.NewMetrics(nil)}
	return &redisFixture{d: d, users: users, keys: keys, t: t}
}

func (f *redisFixture) decide(uid string, at time.Time) decide.Answer {
	req := iosReq
	req.UID = uid
	return f.d.Decide(context.Background(), req, at)
}

// queued is every event queued for uid so far, in order.
func (f *redisFixture) queued(uid string) []event.Event {
	f.t.Helper()
	raw, err := testenv.Redis(f.t).LRange(context.Background(), f.keys.Queue(f.keys.Shard(uid)), 0, -1).Result()
	require.NoError(f.t, err)
	var out []event.Event
	for _, r := range raw {
		ev, err := event.Decode([]byte(r))
		require.NoError(f.t, err)
		if ev.UID == uid {
			out = append(out, ev)
		}
	}
	return out
}

func (f *redisFixture) state(uid string, at time.Time) popup.UserState {
	f.t.Helper()
	st, err := f.users.Get(context.Background(), uid, at)
	require.NoError(f.t, err)
	return st.UserState
}

func TestDecideShowsTheVariantOfTheUsersArm(t *testing.T) {
	t.Parallel()
	e := experiment(popup.ControlNone)
	f := newRedisFixture(t, active(1, withExp(e)))
	uid := uidIn(t, e, 1)

	ans := f.decide(uid, t0)

	require.Equal(t, decide.Shown, ans.Kind)
	assert.Equal(t, "b", ans.Variant)
	assert.JSONEq(t, `{"id":1,"title":"variant b","content":"","image_url":"","link_url":"","buttons":[],"ext":{}}`, string(ans.Body))
	assert.True(t, strings.HasSuffix(ans.DecisionID, "~1.1"), ans.DecisionID)
	evs := f.queued(uid)
	require.Len(t, evs, 1)
	assert.Equal(t, event.Impression, evs[0].Action)
	assert.Equal(t, ans.DecisionID, evs[0].ID)
	assert.Equal(t, 1, evs[0].DayCount)
	assert.Equal(t, []event.ArmRef{{PopupID: 1, Salt: salt, Arm: "b"}}, evs[0].Arms)
}

func TestDecideOutsideTheExperimentIsUnchanged(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		exp  *popup.Experiment
	}{
		{"no experiment", nil},
		{"a draft", func() *popup.Experiment {
			e := experiment(popup.ControlNone)
			e.Status = popup.ExperimentDraft
			return e
		}()},
		{"outside coverage", func() *popup.Experiment { e := experiment(popup.ControlNone); e.CoveragePercent = 0; return e }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRedisFixture(t, active(1, withExp(tt.exp)))
			ans := f.decide("user-1", t0)
			require.Equal(t, decide.Shown, ans.Kind)
			assert.Empty(t, ans.Variant)
			assert.Equal(t, string(ans.Popup.JSON), string(ans.Body))
			assert.NotContains(t, ans.DecisionID, "~")
			evs := f.queued("user-1")
			require.Len(t, evs, 1)
			assert.Empty(t, evs[0].Arms)
		})
	}
}

func TestDecideControlNoneRecordsAnExposureAndShowsNothing(t *testing.T) {
	t.Parallel()
	e := experiment(popup.ControlNone)
	f := newRedisFixture(t, active(1, withExp(e)), active(2, func(p *popup.Popup) { p.Priority = 5 }))
	uid := uidIn(t, e, controlArm)

	ans := f.decide(uid, t0)

	assert.Equal(t, decide.None, ans.Kind, "mode none: no popup, not even the next one")
	evs := f.queued(uid)
	require.Len(t, evs, 1)
	ev := evs[0]
	assert.Equal(t, event.Exposure, ev.Action)
	assert.EqualValues(t, 1, ev.PopupID)
	assert.True(t, strings.HasSuffix(ev.DecisionID, "~1.2"), ev.DecisionID)
	assert.Equal(t, ev.DecisionID+".x1", ev.ID)
	assert.Equal(t, []event.ArmRef{{PopupID: 1, Salt: salt, Arm: "control"}}, ev.Arms)
	assert.Zero(t, ev.DayCount)
	assert.Equal(t, t0.Add(time.Hour), ev.NextShowAt, "the reshow interval applies to the control user")
	assert.Equal(t, 1, ev.Impressions)
	st := f.state(uid, t0)
	assert.Zero(t, st.ImpressionsOn(t0), "the daily count does not count an exposure")
	assert.Equal(t, t0.Add(time.Hour), st.Popups.Get(1).NextShowAt)

	// Within the reshow interval nothing is recorded again: popup 2 is chosen as if 1 were hidden.
	ans = f.decide(uid, t0.Add(time.Minute))
	require.Equal(t, decide.Shown, ans.Kind)
	assert.EqualValues(t, 2, ans.Popup.Popup.ID)
	assert.Len(t, f.queued(uid), 2)
	// After it, the control user is exposed again.
	ans = f.decide(uid, t0.Add(time.Hour))
	assert.Equal(t, decide.None, ans.Kind)
	evs = f.queued(uid)
	require.Len(t, evs, 3)
	assert.Equal(t, event.Exposure, evs[2].Action)
	assert.Equal(t, 2, evs[2].Impressions)
}

func TestDecideControlFallThroughShowsTheNextPopupInOneStep(t *testing.T) {
	t.Parallel()
	x := experiment(popup.ControlFallThrough)
	other := experiment(popup.ControlNone)
	other.Salt = "spring-sale_2026"
	tests := []struct {
		name        string
		next        popup.Popup
		wantVariant string
		wantArms    []event.ArmRef
	}{
		{name: "a plain popup", next: active(2, func(p *popup.Popup) { p.Priority = 5 })},
		{name: "a popup in its own experiment", next: active(2, func(p *popup.Popup) { p.Priority = 5; p.Experiment = other }),
			wantVariant: "a", wantArms: []event.ArmRef{{PopupID: 2, Salt: other.Salt, Arm: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRedisFixture(t, active(1, withExp(x)), tt.next, active(3, func(p *popup.Popup) { p.Priority = 1 }))
			uid := ""
			for i := range 10_000 { // in x's control, and in variant a of the other experiment
				u := "user-" + strconv.Itoa(i)
				xa, oa := popup.NewAssigner(x), popup.NewAssigner(other)
				if xa.Assign(u) == controlArm && oa.Assign(u) == 0 {
					uid = u
					break
				}
			}
			require.NotEmpty(t, uid)

			ans := f.decide(uid, t0)

			require.Equal(t, decide.Shown, ans.Kind)
			assert.EqualValues(t, 2, ans.Popup.Popup.ID, "the next popup after the one that fell through")
			assert.Equal(t, tt.wantVariant, ans.Variant)
			assert.True(t, strings.HasSuffix(ans.DecisionID, "~1.2"), "the decision id names the control that fell through: %s", ans.DecisionID)
			evs := f.queued(uid)
			require.Len(t, evs, 2, "the exposure and the impression, queued together")
			assert.Equal(t, event.Exposure, evs[0].Action)
			assert.EqualValues(t, 1, evs[0].PopupID)
			assert.Equal(t, ans.DecisionID+".x1", evs[0].ID)
			assert.Equal(t, []event.ArmRef{{PopupID: 1, Salt: salt, Arm: "control"}}, evs[0].Arms)
			assert.Equal(t, event.Impression, evs[1].Action)
			assert.EqualValues(t, 2, evs[1].PopupID)
			assert.Equal(t, ans.DecisionID, evs[1].ID)
			assert.Equal(t, 1, evs[1].DayCount, "the impression counts for the day, the exposure does not")
			assert.Equal(t, tt.wantArms, evs[1].Arms)
			st := f.state(uid, t0)
			assert.Equal(t, 1, st.Popups.Get(1).Impressions)
			assert.Equal(t, 1, st.Popups.Get(2).Impressions)
			assert.Equal(t, 1, st.ImpressionsOn(t0))
		})
	}
}

func TestDecideFallThroughWithNothingNextRecordsTheExposure(t *testing.T) {
	t.Parallel()
	x := experiment(popup.ControlFallThrough)
	f := newRedisFixture(t, active(1, withExp(x)))
	uid := uidIn(t, x, controlArm)

	ans := f.decide(uid, t0)

	assert.Equal(t, decide.None, ans.Kind)
	evs := f.queued(uid)
	require.Len(t, evs, 1)
	assert.Equal(t, event.Exposure, evs[0].Action)
}

func TestDecideArmIsSticky(t *testing.T) {
	t.Parallel()
	e := experiment(popup.ControlNone)
	f := newRedisFixture(t, active(1, func(p *popup.Popup) { p.Experiment = e; p.ReshowAfterSeconds = 0 }))
	for arm, want := range []string{"a", "b"} {
		uid := uidIn(t, e, arm)
		for i := range 5 {
			ans := f.decide(uid, t0.Add(time.Duration(i)*time.Minute))
			require.Equal(t, decide.Shown, ans.Kind)
			assert.Equal(t, want, ans.Variant, "request %d of %s", i, uid)
		}
	}
}

func TestActAttributesTheArms(t *testing.T) {
	t.Parallel()
	x := experiment(popup.ControlFallThrough)
	own := experiment(popup.ControlNone)
	own.Salt = "spring-sale_2026"
	none := experiment(popup.ControlNone)
	none.Salt = "0000000000000000"
	// Popup 5 runs x's experiment too (same salt): the user is in its control as well.
	popups := []popup.Popup{active(1, withExp(x)), active(2, withExp(own)), active(3, nil), active(4, withExp(none)), active(5, withExp(x))}
	var uid string
	for i := range 10_000 { // in x's control, variant b of popup 2's experiment and the control of popup 4's
		u := "user-" + strconv.Itoa(i)
		xa, oa, na := popup.NewAssigner(x), popup.NewAssigner(own), popup.NewAssigner(none)
		if xa.Assign(u) == controlArm && oa.Assign(u) == 1 && na.Assign(u) == controlArm {
			uid = u
			break
		}
	}
	require.NotEmpty(t, uid)
	xControl := event.ArmRef{PopupID: 1, Salt: salt, Arm: "control"}
	tests := []struct {
		name     string
		popupID  int64
		decision string
		want     []event.ArmRef
	}{
		{name: "a popup outside any experiment", popupID: 3, decision: "d-1", want: nil},
		{name: "the user's arm in the popup's experiment, without a decision id", popupID: 2,
			want: []event.ArmRef{{PopupID: 2, Salt: own.Salt, Arm: "b"}}},
		{name: "a fall-through's control", popupID: 3, decision: "d-1~1.2", want: []event.ArmRef{xControl}},
		{name: "both", popupID: 2, decision: "d-1~1.2", want: []event.ArmRef{{PopupID: 2, Salt: own.Salt, Arm: "b"}, xControl}},
		{name: "every control of a chain", popupID: 3, decision: "d-1~1.2~5.2",
			want: []event.ArmRef{xControl, {PopupID: 5, Salt: salt, Arm: "control"}}},
		{name: "forged: a control named twice", popupID: 3, decision: "d-1~1.2~1.2", want: []event.ArmRef{xControl}},
		{name: "forged: a chain's second control that does not fall through", popupID: 3, decision: "d-1~1.2~4.2", want: []event.ArmRef{xControl}},
		{name: "forged: a variant arm, not the control", popupID: 3, decision: "d-1~1.0", want: nil},
		{name: "forged: an arm the experiment does not have", popupID: 3, decision: "d-1~1.7", want: nil},
		{name: "forged: the popup's own suffix", popupID: 1, decision: "d-1~1.2", want: []event.ArmRef{xControl}},
		{name: "forged: an unknown popup", popupID: 3, decision: "d-1~99.2", want: nil},
		{name: "forged: a control that shows nothing does not fall through", popupID: 3, decision: "d-1~4.2", want: nil},
		{name: "forged: not numbers", popupID: 3, decision: "d-1~x.2", want: nil},
		{name: "forged: no arm", popupID: 3, decision: "d-1~1", want: nil},
		{name: "forged: negative", popupID: 3, decision: "d-1~1.-2", want: nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRedisFixture(t, popups...)
			err := f.d.Act(context.Background(), decide.Report{UID: uid, PopupID: tt.popupID, Kind: event.Click,
				EventID: "e" + strconv.Itoa(i), DecisionID: tt.decision}, t0)
			require.NoError(t, err, "a forged suffix is never an error")
			evs := f.queued(uid)
			require.Len(t, evs, 1)
			assert.Equal(t, tt.want, evs[0].Arms)
		})
	}
}

func TestExplainNamesTheArm(t *testing.T) {
	t.Parallel()
	e := experiment(popup.ControlNone)
	f := newRedisFixture(t, active(1, withExp(e)))
	for arm, want := range []string{"a", "b", "control"} {
		req := iosReq
		req.UID = uidIn(t, e, arm)
		ex, err := f.d.Explain(context.Background(), req, t0, decide.ExplainOptions{})
		require.NoError(t, err)
		assert.Equal(t, want, ex.Arm)
		if arm < 2 {
			assert.Contains(t, string(ex.Shown), `"title":"variant `+want+`"`)
		}
	}
	req := iosReq
	req.UID = uidIn(t, e, 0)
	assert.Empty(t, f.queued(req.UID), "an explanation records nothing")
}

// freshUsers is a store whose every user is new and whose every record succeeds: the decision's
// own CPU, without a store's.
type freshUsers struct{}

func (freshUsers) Get(context.Context, string, time.Time) (popup.StoredState, error) {
	return popup.StoredState{}, nil
}

func (freshUsers) Record(context.Context, string, string, *popup.UserState, []event.Event, bool) (popup.Outcome, error) {
	return popup.Recorded, nil
}

// BenchmarkDecideExperiment is a decision that shows a popup (and records it, in a store that
// costs nothing) for a user outside any experiment, in a variant, and in a control that falls
// through to the next popup: the difference is what an experiment adds to a decision.
func BenchmarkDecideExperiment(b *testing.B) {
	variant := experiment(popup.ControlFallThrough)
	uids := map[string]string{}
	for name, arm := range map[string]int{"variant": 1, "control fall-through": controlArm} {
		a := popup.NewAssigner(variant)
		for i := 0; ; i++ {
			if uid := "user-" + strconv.Itoa(i); a.Assign(uid) == arm {
				uids[name] = uid
				break
			}
		}
	}
	for _, bc := range []struct {
		name string
		exp  *popup.Experiment
		uid  string
	}{
		{"no experiment", nil, "user-1"},
		{"variant", variant, uids["variant"]},
		{"control fall-through", variant, uids["control fall-through"]},
	} {
		b.Run(bc.name, func(b *testing.B) {
			holder := &snapshot.Holder{}
			holder.Store(snapshot.BuildWith(1, []popup.Popup{active(1, withExp(bc.exp)), active(2, func(p *popup.Popup) { p.Priority = 5 })}, t0, popup.LinkSchemes{}, nil))
			d := &decide.Decider{Snapshots: holder, Users: freshUsers{}, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second,
				Metrics: decide.NewMetrics(nil)}
			ctx := context.Background()
			req := iosReq
			req.UID = bc.uid
			if a := d.Decide(ctx, req, t0); a.Kind != decide.Shown {
				b.Fatalf("want a popup, got %v", a.Kind)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.Decide(ctx, req, t0)
			}
		})
	}
}

// TestLocalAnswersHoldAcrossControlExposures: an exposure only extends hiding, like an
// impression, so a remembered "nothing until t" stays right for a control user, and at t the
// user is exposed again.
func TestLocalAnswersHoldAcrossControlExposures(t *testing.T) {
	t.Parallel()
	e := experiment(popup.ControlNone)
	f := newFixture(t, 1000, popup.Pacing{}, active(1, withExp(e)))
	req := iosReq
	req.UID = uidIn(t, e, controlArm)
	tests := []struct {
		at       time.Duration
		wantRead bool
	}{
		{0, true},                        // exposed: a full decision
		{time.Minute, true},              // nothing eligible: a full decision, remembered until the reshow
		{30 * time.Minute, false},        // the local answer
		{time.Hour - time.Second, false}, // still
		{time.Hour, true},                // the reshow instant: exposed again
	}
	for _, tt := range tests {
		kind, _, read := f.decide(t, req, t0.Add(tt.at))
		assert.Equal(t, decide.None, kind, "+%v", tt.at)
		assert.Equal(t, tt.wantRead, read, "+%v", tt.at)
	}
	st, err := f.store.Get(context.Background(), req.UID, t0)
	require.NoError(t, err)
	assert.Equal(t, 2, st.Popups.Get(1).Impressions, "two exposures")
	assert.Zero(t, st.DayCount)
}

// TestDecideControlsFallingThroughInAChain: a control falls through to a popup whose own control
// falls through too; every exposure is recorded with the impression at the end, and a chain stops
// at the fourth exposure with no popup.
func TestDecideControlsFallingThroughInAChain(t *testing.T) {
	t.Parallel()
	x := experiment(popup.ControlFallThrough) // one salt for all: the user is in every control
	uid := uidIn(t, x, controlArm)
	controls := func(n int) []popup.Popup {
		var ps []popup.Popup
		for id := 1; id <= n; id++ {
			ps = append(ps, active(int64(id), func(p *popup.Popup) { p.Experiment = x; p.Priority = 100 - id }))
		}
		return ps
	}
	tests := []struct {
		name          string
		popups        []popup.Popup
		wantKind      decide.Kind
		wantExposures []int64
		wantShown     int64
	}{
		{name: "two controls, then a popup", popups: append(controls(2), active(9, func(p *popup.Popup) { p.Priority = 1 })),
			wantKind: decide.Shown, wantExposures: []int64{1, 2}, wantShown: 9},
		{name: "five controls: stops after four", popups: append(controls(5), active(9, func(p *popup.Popup) { p.Priority = 1 })),
			wantKind: decide.None, wantExposures: []int64{1, 2, 3, 4}},
		{name: "ids too long to name a second control: stops before it", popups: []popup.Popup{
			active(1e18+1, func(p *popup.Popup) { p.Experiment = x; p.Priority = 99 }),
			active(1e18+2, func(p *popup.Popup) { p.Experiment = x; p.Priority = 98 }),
			active(9, func(p *popup.Popup) { p.Priority = 1 })},
			wantKind: decide.None, wantExposures: []int64{1e18 + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRedisFixture(t, tt.popups...)

			ans := f.decide(uid, t0)

			require.Equal(t, tt.wantKind, ans.Kind, "%+v %+v", ans, f.queued(uid))
			var exposed []int64
			var shown int64
			for _, ev := range f.queued(uid) {
				switch ev.Action {
				case event.Exposure:
					exposed = append(exposed, ev.PopupID)
					assert.Equal(t, ev.DecisionID+".x"+strconv.Itoa(len(exposed)), ev.ID)
				case event.Impression:
					shown = ev.PopupID
				}
			}
			assert.Equal(t, tt.wantExposures, exposed)
			assert.Equal(t, tt.wantShown, shown)
			// The decision id names every control the chain passed, so that a click on the popup
			// it ends at counts for each of them.
			var suffix string
			for _, id := range tt.wantExposures {
				suffix += "~" + strconv.FormatInt(id, 10) + "." + strconv.Itoa(controlArm)
			}
			for _, ev := range f.queued(uid) {
				assert.True(t, strings.HasSuffix(ev.DecisionID, suffix), "%s does not end in %s", ev.DecisionID, suffix)
			}
		})
	}
}
