// Command popup-healthcheck is the container healthcheck of the popup image: the distroless
// runtime has no shell, curl or wget, so docker compose runs this instead.
//
//	popup-healthcheck http://127.0.0.1:8080/readyz
//
// It exits 0 when the URL answers 2xx within the timeout, and 1 otherwise.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 2*time.Second, "give up after this long")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: popup-healthcheck [-timeout 2s] URL")
		os.Exit(2)
	}
	if err := check(flag.Arg(0), *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "popup-healthcheck:", err)
		os.Exit(1)
	}
}

func check(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // only the status matters
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}
