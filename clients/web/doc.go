// Package web holds the browser SDK popup-client.js (a plain ES module, served as it is; no Go
// code uses it) and its tests: its size in sdk_size_test.go, its behaviour in Chromium against a
// real popup-api in sdk_browser_test.go and sdk_pages_browser_test.go (build tag clients, run by
// scripts/clients.sh). package.json makes the directory the npm package @popupsvc/web-client.
package web
