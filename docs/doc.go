// Package docs holds the project's documents; its test (docs_test.go) checks that every link,
// anchor and repository path they name exists, and that CONTRACT.md's contents list its sections.
package docs
