package apiserver_test

import "testing"

// csvDo sends a table (or nothing) to the admin API and returns the status, the ETag and the body.
func csvDo(t *testing.T, in *instance, method, path, body string, header map[string]string) (int, string, string) {
	t.Helper()
	return in.CSVDo(t, method, path, body, header)
}
