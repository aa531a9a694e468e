package audiences_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"popupsvc/internal/apiserver/apitest"
)

// BenchmarkAudienceTenMillionUpload replaces an audience's members with 10,000,000 uids over
// loopback, the admin listener's two-minute read timeout in force, then streams them back
// (docs/PERFORMANCE.md, "Audiences", has the figures and the command). The upload is unpaced
// (POPUP_AUDIENCE_UPLOAD_RATE 0): this measures the path's own speed, not the pacing.
func BenchmarkAudienceTenMillionUpload(b *testing.B) {
	cfg := apitest.Config(b)
	cfg.AudienceUploadRate = 0
	api := apitest.Start(b, cfg, nil)
	var body bytes.Buffer
	for i := range 10_000_000 {
		fmt.Fprintf(&body, "user-%08d\n", i)
	}
	raw := body.Bytes()
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for range b.N {
		id := api.CreateAudience(b, "ten-million-"+strconv.Itoa(b.N)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
		began := time.Now()
		status, res, text := api.Send(b, apitest.Token, "PUT", "/admin/v1/audiences/"+id+"/members", "text/plain", bytes.NewReader(raw))
		if status != http.StatusOK || apitest.Num(res["size"]) != 10_000_000 {
			b.Fatalf("upload: %d %.300s", status, text)
		}
		b.ReportMetric(time.Since(began).Seconds(), "upload-s")
		began = time.Now()
		status, res, text = api.Send(b, apitest.Token, "POST", "/admin/v1/audiences/"+id+"/members/add", "text/plain", strings.NewReader("extra-1\nextra-2\n"))
		if status != http.StatusOK || apitest.Num(res["size"]) != 10_000_002 {
			b.Fatalf("add: %d %.300s", status, text)
		}
		b.ReportMetric(time.Since(began).Seconds(), "add2-s")
		began = time.Now()
		status, _, text = api.Send(b, apitest.Token, "GET", "/admin/v1/audiences/"+id+"/members", "", nil)
		if status != http.StatusOK || strings.Count(text, "\n") != 10_000_002 {
			b.Fatalf("stream back: %d, %d lines", status, strings.Count(text, "\n"))
		}
		b.ReportMetric(time.Since(began).Seconds(), "streamback-s")
	}
}
