// Command refserver is the benchmark's reference: a bare net/http server answering every request
// with a fixed JSON body of a popup answer's size. popup-api's throughput is reported as a ratio
// of this server's, measured in the same run with the same load settings.
package main

import (
	"flag"
	"log"
	"net/http"
	"strconv"
	"strings"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18090", "listen address")
	size := flag.Int("size", 320, "body size in bytes")
	flag.Parse()
	prefix := `{"popup":{"id":1,"title":"`
	suffix := `"},"decision_id":"0123456789abcdef-1","config_version":1}`
	pad := max(*size-len(prefix)-len(suffix), 0)
	body := []byte(prefix + strings.Repeat("x", pad) + suffix)
	length := strconv.Itoa(len(body))
	log.Printf("refserver on %s, body %d bytes", *addr, len(body))
	err := http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"application/json; charset=utf-8"}
		h["Content-Length"] = []string{length}
		w.Write(body) // benchmark reference
	}))
	log.Fatal(err)
}
