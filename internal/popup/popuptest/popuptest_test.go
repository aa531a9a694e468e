package popuptest

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"popupsvc/internal/popup"
)

func TestFullSetsEveryField(t *testing.T) {
	t.Parallel()
	RequireNoZeroField(t, Full())
}

func TestZeroFieldsNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	p := Full()
	p.Title, p.Targeting.Langs, p.Buttons[0].LinkURL = "", nil, ""
	assert.Equal(t, []string{"popup.Popup.Targeting.Langs", "popup.Popup.Creative.Title", "popup.Popup.Creative.Buttons[0].LinkURL"}, ZeroFields(p))
	assert.Empty(t, ZeroFields(popup.Button{Text: "a", LinkURL: "b"}))
}
