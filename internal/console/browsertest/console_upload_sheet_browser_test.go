package browsertest

import (
	"net/http"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// TestConsoleUploadChoosesTheUIDColumn: a CSV export whose header has no uid column
// (customer_id,email) is offered a choice of its columns, customer_id guessed; the upload with
// it adds the trimmed ids and the answer says duplicates and blank lines; axe on the screen.
func TestConsoleUploadChoosesTheUIDColumn(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/audiences", map[string]any{"name": "CRM export"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := apitest.Itoa(int64(res.Body["id"].(float64)))
	b := newBrowser(t, in)
	b.signIn()
	b.openAudience(id)

	b.run(chromedp.SetUploadFiles("#upload-file", []string{memberFile(t, "crm.csv",
		"customer_id,email\n vip-1 ,a@example.com\nvip-2,b@example.com\n\nvip-1,c@example.com\n")}, chromedp.ByQuery))
	b.waitFor(`!document.querySelector('#upload-column-row').hidden`)
	var options []string
	b.eval(`[...document.querySelectorAll('#upload-uid-column option')].map((o) => o.value)`, &options)
	assert.Equal(t, []string{"customer_id", "email"}, options, "the header's columns")
	var chosen string
	b.eval(`document.querySelector('#upload-uid-column').value`, &chosen)
	assert.Equal(t, "customer_id", chosen)
	b.axeCheck("audience upload with a column to choose")
	b.shot("audience-upload-column", "#upload-h")
	b.run(chromedp.Click("#upload-mode-add", chromedp.ByQuery), chromedp.Click("#upload-submit", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#upload-result')`)
	assert.Contains(t, b.text("#upload-result"), "3 lines read, 2 added, 0 removed, 1 duplicate, 1 blank")
	assert.Equal(t, "2", b.text("#audience-size"))
	assert.Equal(t, []string{"vip-1", "vip-2"}, in.Members(t, id), "stored trimmed, each once")
	b.run(emulation.SetDeviceMetricsOverride(390, 844, 2, true))
	b.axeCheck("audience upload on a phone")
	b.shot("audience-upload-phone", "#upload-h")
}
