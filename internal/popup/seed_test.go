package popup_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

func TestBucketSeedValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want bool
	}{
		{give: "", want: true}, // none given: assigned on save
		{give: "a", want: true},
		{give: "3f9a0c2b7d1e4a65", want: true},
		{give: "Spring_Sale-2026", want: true},
		{give: strings.Repeat("x", 64), want: true},
		{give: strings.Repeat("x", 65), want: false},
		{give: "has space", want: false},
		{give: "dot.ted", want: false},
		{give: "colon:", want: false},
		{give: "é", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, err := input(func(in *popup.Input) { in.BucketSeed = tt.give }).BuildWith(popup.LinkSchemes{})
			if tt.want {
				assert.NoError(t, err)
				return
			}
			var ve *popup.ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, []popup.FieldError{{Field: "bucket_seed", Message: "must be " + popup.BucketSeedRule}}, ve.Fields)
		})
	}
}

func TestNewBucketSeedIsSixteenHexAndFresh(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		s := popup.NewBucketSeed()
		assert.Regexp(t, `^[0-9a-f]{16}$`, s)
		assert.False(t, seen[s], "drawn twice: %s", s)
		seen[s] = true
	}
}

func TestGiveBucketSeedKeepsAGivenOne(t *testing.T) {
	t.Parallel()
	p := popup.Popup{BucketSeed: "draft-seed"}
	p.GiveBucketSeed()
	assert.Equal(t, "draft-seed", p.BucketSeed)
	p.BucketSeed = ""
	p.GiveBucketSeed()
	assert.True(t, popup.ValidBucketSeed(p.BucketSeed))
}

func TestKeepBucketSeed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		stored  popup.Popup
		give    string
		want    string
		wantErr error
	}{
		{name: "omitted keeps the stored seed", stored: popup.Popup{ID: 4, BucketSeed: "abc"}, give: "", want: "abc"},
		{name: "the same seed", stored: popup.Popup{ID: 4, BucketSeed: "abc"}, give: "abc", want: "abc"},
		{name: "another seed is refused", stored: popup.Popup{ID: 4, BucketSeed: "abc"}, give: "abd", wantErr: popup.ErrBucketSeedChanged},
		{name: "a popup from before seeds has its id", stored: popup.Popup{ID: 4}, give: "", want: "4"},
		{name: "its id, sent back, is the same seed", stored: popup.Popup{ID: 4}, give: "4", want: "4"},
		{name: "another seed for it is refused", stored: popup.Popup{ID: 4}, give: "5", wantErr: popup.ErrBucketSeedChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := popup.Popup{BucketSeed: tt.give}
			err := p.KeepBucketSeed(tt.stored)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.BucketSeed)
		})
	}
}

// TestRolloutFollowsTheSeedNotTheID is finding 3 of issue 22: a popup's rollout must not depend on
// the id it gets when saved, so that a draft (id 0) previews the buckets of the saved popup.
func TestRolloutFollowsTheSeedNotTheID(t *testing.T) {
	t.Parallel()
	rollout := func(in *popup.Input) {
		in.BucketSeed = "3f9a0c2b7d1e4a65"
		in.Targeting = &popup.TargetingInput{RolloutPercent: ptr(30)}
	}
	draft, saved := compiled(t, 0, rollout), compiled(t, 812, rollout)
	r := baseRequest(t)
	in := 0
	for i := range 1000 {
		r.UID = "user-" + strconv.Itoa(i)
		want := popup.RolloutBucket("3f9a0c2b7d1e4a65", r.UID) < 30
		assert.Equal(t, want, draft.Match(r) == popup.ReasonNone, r.UID)
		assert.Equal(t, want, saved.Match(r) == popup.ReasonNone, r.UID)
		in += boolInt(want)
	}
	assert.InDelta(t, 300, in, 60, "about 30% in the rollout")

	// Without a seed (a popup cached before seeds existed) the decimal id is the seed.
	legacy := compiled(t, 812, targeting(popup.TargetingInput{RolloutPercent: ptr(30)}))
	for i := range 200 {
		r.UID = "user-" + strconv.Itoa(i)
		assert.Equal(t, popup.RolloutBucket("812", r.UID) < 30, legacy.Match(r) == popup.ReasonNone, r.UID)
	}
}

func TestBatchItemErrorNamesThePopup(t *testing.T) {
	t.Parallel()
	err := error(&popup.BatchItemError{Index: 3, Err: popup.ErrBucketSeedChanged})
	assert.True(t, errors.Is(err, popup.ErrBucketSeedChanged))
	assert.Equal(t, "popups[3]: "+popup.ErrBucketSeedChanged.Error(), err.Error())
}
