// Package browsertest holds the operator console's browser tests and nothing else: each drives
// the console (internal/console) in a real headless Chromium against a real popup-api on the
// test MariaDB and Redis (internal/apiserver/apitest), with axe-core checking accessibility.
//
// Why a package of their own, beside the console rather than in internal/apiserver: go test runs
// each package as a process of its own and runs packages side by side, while one package's tests
// share one process. The browser tests share a Chromium (one per package: a Chromium start costs
// about a CPU-second, a browser context a window) and nothing else with the API's own end-to-end
// tests, so in a package of their own the two sets run at the same time.
package browsertest
