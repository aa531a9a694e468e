// Command refserver is the benchmark's reference: a bare net/http server answering every request
// with a fixed JSON body of a popup answer's size. popup-api's throughput is reported as a ratio
// of this server's, measured in the same run with the same load settings.
package main

import (
	"flag"
	"log"
	"net/http"

	"popupsvc/loadtest/bareanswer"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18090", "listen address")
	size := flag.Int("size", 320, "body size in bytes")
	flag.Parse()
	answer := bareanswer.New(*size)
	log.Printf("refserver on %s, body %d bytes", *addr, answer.Len())
	err := http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { answer.Write(w) }))
	log.Fatal(err)
}
