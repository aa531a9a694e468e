package popup_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// baseRequest is an iOS 8.10.0 user in China with Chinese as app language.
func baseRequest(t testing.TB) popup.Request {
	return popup.Request{UID: "u1", Platform: "ios", AppVersion: mustVersion(t, "8.10.0"), Region: "CN", Lang: "zh"}
}

func targeting(tg popup.TargetingInput) func(*popup.Input) {
	return func(in *popup.Input) { in.Targeting = &tg }
}

func TestMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give popup.TargetingInput
		req  func(*popup.Request)
		want popup.Reason
	}{
		{name: "no limits match anything", req: func(r *popup.Request) { *r = popup.Request{UID: "x"} }, want: popup.ReasonNone},

		{name: "platform listed", give: popup.TargetingInput{Platforms: []string{"android", "ios"}}, want: popup.ReasonNone},
		{name: "platform not listed", give: popup.TargetingInput{Platforms: []string{"android", "web"}}, want: popup.ReasonPlatform},
		{name: "platform case-insensitive", give: popup.TargetingInput{Platforms: []string{"ios"}},
			req: func(r *popup.Request) { r.Platform = "iOS" }, want: popup.ReasonNone},
		{name: "unknown request platform against a list", give: popup.TargetingInput{Platforms: []string{"ios"}},
			req: func(r *popup.Request) { r.Platform = "" }, want: popup.ReasonPlatform},

		{name: "at min version", give: popup.TargetingInput{MinAppVersion: "8.10.0"}, want: popup.ReasonNone},
		{name: "below min version", give: popup.TargetingInput{MinAppVersion: "8.10.0"},
			req: func(r *popup.Request) { r.AppVersion = mustVersion(t, "8.9.9") }, want: popup.ReasonAppVersion},
		{name: "min compared numerically not as strings", give: popup.TargetingInput{MinAppVersion: "8.9"}, want: popup.ReasonNone},
		{name: "at max version with fewer parts", give: popup.TargetingInput{MaxAppVersion: "8.10"}, want: popup.ReasonNone},
		{name: "above max version", give: popup.TargetingInput{MaxAppVersion: "8.10"},
			req: func(r *popup.Request) { r.AppVersion = mustVersion(t, "8.10.0.1") }, want: popup.ReasonAppVersion},
		{name: "inside range", give: popup.TargetingInput{MinAppVersion: "8.9.9", MaxAppVersion: "9"}, want: popup.ReasonNone},
		{name: "range of one version", give: popup.TargetingInput{MinAppVersion: "8.10.0", MaxAppVersion: "8.10.0"}, want: popup.ReasonNone},
		{name: "missing request version below min", give: popup.TargetingInput{MinAppVersion: "1"},
			req: func(r *popup.Request) { r.AppVersion = popup.Version{} }, want: popup.ReasonAppVersion},

		{name: "region case-insensitive", give: popup.TargetingInput{Regions: []string{"us", "cn"}}, want: popup.ReasonNone},
		{name: "upper-case config region", give: popup.TargetingInput{Regions: []string{"CN"}},
			req: func(r *popup.Request) { r.Region = "cn" }, want: popup.ReasonNone},
		{name: "region not listed", give: popup.TargetingInput{Regions: []string{"us"}}, want: popup.ReasonRegion},
		{name: "empty request region against a list", give: popup.TargetingInput{Regions: []string{"cn"}},
			req: func(r *popup.Request) { r.Region = "" }, want: popup.ReasonRegion},
		{name: "empty request region without a list", req: func(r *popup.Request) { r.Region = "" }, want: popup.ReasonNone},
		{name: "many regions, none the request's", give: popup.TargetingInput{Regions: []string{
			"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x",
		}}, want: popup.ReasonRegion},
		{name: "many regions, the request's last", give: popup.TargetingInput{Regions: []string{
			"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "cn",
		}}, want: popup.ReasonNone},
		{name: "request region longer than any code", give: popup.TargetingInput{Regions: []string{"abcdefghijklmnop"}},
			req: func(r *popup.Request) { r.Region = "abcdefghijklmnopq" }, want: popup.ReasonRegion},
		{name: "request region with a NUL byte", give: popup.TargetingInput{Regions: []string{"cn"}},
			req: func(r *popup.Request) { r.Region = "cn\x00" }, want: popup.ReasonRegion},
		{name: "request region of 16 characters", give: popup.TargetingInput{Regions: []string{"abcdefghijklmnop"}},
			req: func(r *popup.Request) { r.Region = "ABCDEFGHIJKLMNOP" }, want: popup.ReasonNone},

		{name: "lang case-insensitive", give: popup.TargetingInput{Langs: []string{"zh-Hans"}},
			req: func(r *popup.Request) { r.Lang = "ZH-HANS" }, want: popup.ReasonNone},
		{name: "lang not listed", give: popup.TargetingInput{Langs: []string{"en"}}, want: popup.ReasonLang},
		{name: "empty request lang against a list", give: popup.TargetingInput{Langs: []string{"zh"}},
			req: func(r *popup.Request) { r.Lang = "" }, want: popup.ReasonLang},

		{name: "rollout 0", give: popup.TargetingInput{RolloutPercent: ptr(0)}, want: popup.ReasonRollout},
		{name: "allow-listed uid bypasses rollout", give: popup.TargetingInput{RolloutPercent: ptr(0), UIDs: []string{"qa", "u1"}},
			want: popup.ReasonNone},
		{name: "uid found in a long allow-list", give: popup.TargetingInput{RolloutPercent: ptr(0), UIDs: append(uids(999), "u1")},
			want: popup.ReasonNone},
		{name: "uid missing from a long allow-list", give: popup.TargetingInput{RolloutPercent: ptr(0), UIDs: uids(1000)},
			want: popup.ReasonRollout},
		{name: "allow-list is case-sensitive", give: popup.TargetingInput{RolloutPercent: ptr(0), UIDs: []string{"U1"}},
			want: popup.ReasonRollout},
		{name: "allow-listed uid still needs the platform",
			give: popup.TargetingInput{Platforms: []string{"android"}, RolloutPercent: ptr(0), UIDs: []string{"u1"}},
			want: popup.ReasonPlatform},
		{name: "allow-listed uid still needs the version",
			give: popup.TargetingInput{MinAppVersion: "9", RolloutPercent: ptr(0), UIDs: []string{"u1"}},
			want: popup.ReasonAppVersion},
		{name: "allow-listed uid still needs the region",
			give: popup.TargetingInput{Regions: []string{"us"}, RolloutPercent: ptr(0), UIDs: []string{"u1"}},
			want: popup.ReasonRegion},
		{name: "allow-listed uid still needs the lang",
			give: popup.TargetingInput{Langs: []string{"en"}, RolloutPercent: ptr(0), UIDs: []string{"u1"}},
			want: popup.ReasonLang},

		{name: "platform is reported before later failures",
			give: popup.TargetingInput{Platforms: []string{"web"}, MinAppVersion: "99", Regions: []string{"us"}, RolloutPercent: ptr(0)},
			want: popup.ReasonPlatform},
		{name: "version is reported before region",
			give: popup.TargetingInput{MinAppVersion: "99", Regions: []string{"us"}}, want: popup.ReasonAppVersion},
		{name: "region is reported before lang",
			give: popup.TargetingInput{Regions: []string{"us"}, Langs: []string{"en"}}, want: popup.ReasonRegion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compiled(t, 1, targeting(tt.give))
			r := baseRequest(t)
			apply(tt.req, &r)

			assert.Equal(t, tt.want, c.Match(r))
		})
	}
}

// apply calls mod on r when there is one, so table rows can leave the request unchanged.
func apply(mod func(*popup.Request), r *popup.Request) {
	if mod != nil {
		mod(r)
	}
}

func TestRolloutBucketKnownAnswers(t *testing.T) {
	t.Parallel()
	// The same vector is in RolloutBucket's doc comment; SQL or Python ports must reproduce it.
	// Changing one of these answers moves users in or out of every partial rollout: it is never
	// a refactoring. The seeds that are decimal ids are those migration 00007 gave existing popups.
	tests := []struct {
		seed string
		uid  string
		want int
	}{
		{seed: "1", uid: "u1", want: 40},
		{seed: "7", uid: "qa-device-1", want: 73},
		{seed: "42", uid: "user-1000", want: 90},
		{seed: "123456789", uid: "a:b.c", want: 38},
		{seed: "-5", uid: "x", want: 65},
		{seed: "9223372036854775807", uid: "z", want: 23},
		{seed: "3f9a0c2b7d1e4a65", uid: "user-1", want: 75},
		{seed: "spring-sale_2026", uid: "vip-3", want: 34},
		{seed: "a", uid: "b", want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.seed+":"+tt.uid, func(t *testing.T) {
			assert.Equal(t, tt.want, popup.RolloutBucket(tt.seed, tt.uid))
		})
	}
}

func TestRolloutIsSticky(t *testing.T) {
	t.Parallel()
	c := compiled(t, 9, targeting(popup.TargetingInput{RolloutPercent: ptr(50)}))
	r := baseRequest(t)
	for i := range 1000 {
		r.UID = "user-" + strconv.Itoa(i)
		first, second := c.Match(r), c.Match(r)
		assert.Equal(t, first, second, r.UID)
		assert.Equal(t, popup.RolloutBucket("9", r.UID), popup.RolloutBucket("9", r.UID), r.UID)
	}
}

func TestRolloutExtremes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		percent int
		want    int // users admitted out of 10,000
	}{
		{name: "0 percent admits nobody", percent: 0, want: 0},
		{name: "100 percent admits everybody", percent: 100, want: 10000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compiled(t, 3, targeting(popup.TargetingInput{RolloutPercent: ptr(tt.percent)}))
			assert.Equal(t, tt.want, countAdmitted(t, c, 10000))
		})
	}
}

func TestRolloutZeroAdmitsAllowListedUIDs(t *testing.T) {
	t.Parallel()
	c := compiled(t, 3, targeting(popup.TargetingInput{RolloutPercent: ptr(0), UIDs: []string{"user-17", "user-4242"}}))

	assert.Equal(t, 2, countAdmitted(t, c, 10000))
}

func TestRaisingRolloutOnlyAddsUsers(t *testing.T) {
	t.Parallel()
	const users = 10000
	admitted := make([][]bool, 101) // admitted[percent][user]
	for percent := range admitted {
		c := compiled(t, 42, targeting(popup.TargetingInput{RolloutPercent: ptr(percent)}))
		r := baseRequest(t)
		admitted[percent] = make([]bool, users)
		for i := range users {
			r.UID = "user-" + strconv.Itoa(i)
			admitted[percent][i] = c.Match(r) == popup.ReasonNone
		}
	}

	// Checking each step N -> N+1 covers every N -> N+k, since inclusion is transitive.
	lost := 0
	for percent := range 100 {
		for i := range users {
			lost += boolInt(admitted[percent][i] && !admitted[percent+1][i])
		}
		share := float64(count(admitted[percent])) / users * 100
		assert.InDelta(t, float64(percent), share, 2, "percent %d", percent)
	}
	assert.Zero(t, lost, "users dropped when the rollout was raised")
}

func TestRolloutBucketsAreUniform(t *testing.T) {
	t.Parallel()
	const users = 100000
	var buckets [100]int
	for i := range users {
		buckets[popup.RolloutBucket("7", "user-"+strconv.Itoa(i))]++
	}

	// 1,000 expected per bucket; the standard deviation is about 31, so ±150 is almost 5 sigma.
	for b, n := range buckets {
		assert.InDelta(t, 1000, n, 150, "bucket %d", b)
	}
}

func TestRolloutSlicesDifferBetweenPopups(t *testing.T) {
	t.Parallel()
	// The hash is keyed by the popup's seed so one unlucky user is not in every 10% experiment: two 50%
	// rollouts should share about a quarter of the users, not half.
	const users = 10000
	both := 0
	for i := range users {
		uid := "user-" + strconv.Itoa(i)
		both += boolInt(popup.RolloutBucket("1", uid) < 50 && popup.RolloutBucket("2", uid) < 50)
	}
	assert.InDelta(t, 0.25, float64(both)/users, 0.03)
}

func TestInWindow(t *testing.T) {
	t.Parallel()
	start, end := now, now.Add(time.Hour)
	tests := []struct {
		name       string
		start, end *time.Time
		give       time.Time
		want       bool
	}{
		{name: "open window", give: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), want: true},
		{name: "at start", start: &start, end: &end, give: start, want: true},
		{name: "1ns before start", start: &start, end: &end, give: start.Add(-time.Nanosecond), want: false},
		{name: "1ns before end", start: &start, end: &end, give: end.Add(-time.Nanosecond), want: true},
		{name: "at end", start: &start, end: &end, give: end, want: false},
		{name: "after end", start: &start, end: &end, give: end.Add(time.Hour), want: false},
		{name: "open end", start: &start, give: start.AddDate(100, 0, 0), want: true},
		{name: "open start", end: &end, give: time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), want: true},
		{name: "other time zone, same instant as end", start: &start, end: &end,
			give: end.In(time.FixedZone("UTC+8", 8*3600)), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compiled(t, 1, func(in *popup.Input) { in.StartAt, in.EndAt = tt.start, tt.end })
			assert.Equal(t, tt.want, c.InWindow(tt.give))
		})
	}
}

func TestCompileRejectsInvalidPopup(t *testing.T) {
	t.Parallel()
	c, err := popup.CompileWith(popup.Popup{ID: 1, Name: "x", Status: "bogus"}, popup.LinkSchemes{})

	assert.Nil(t, c)
	assert.Equal(t, []string{"status"}, fieldNames(fieldErrors(t, err)))
}

func TestCompileNormalizesAStoredPopup(t *testing.T) {
	t.Parallel()
	// A row read from a store may have nil slices and no ext; the compiled copy encodes as [] and {}.
	c, err := popup.CompileWith(popup.Popup{ID: 1, Name: "x", Status: popup.StatusActive, Targeting: popup.Targeting{RolloutPercent: 100}}, popup.LinkSchemes{})
	require.NoError(t, err)

	assert.Equal(t, []popup.Button{}, c.Popup.Buttons)
	assert.Equal(t, []string{}, c.Popup.Targeting.Platforms)
	assert.Equal(t, `{}`, string(c.Popup.Ext))
}

func countAdmitted(t *testing.T, c *popup.Compiled, users int) int {
	t.Helper()
	r := baseRequest(t)
	n := 0
	for i := range users {
		r.UID = "user-" + strconv.Itoa(i)
		n += boolInt(c.Match(r) == popup.ReasonNone)
	}
	return n
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		n += boolInt(b)
	}
	return n
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
