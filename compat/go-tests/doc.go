// Package gotests drives the official Go client
// (github.com/apache/rocketmq-client-go/v2, pinned in go.mod) against a
// running name server and broker. Every case lives in a _test.go file and is
// configured only through the environment (NAMESRV_ADDR, TOPIC, ...), so the
// pytest driver tests/compat/test_go_clients.py can aim one prebuilt binary,
// bin/compat.test, at pyrmq or at the Java servers. See README.md.
package gotests
