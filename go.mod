module github.com/flowfabric/flowfabric

go 1.26

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/google/go-cmp v0.7.0
	github.com/robfig/cron/v3 v3.0.1
	github.com/tidwall/btree v1.8.2
	github.com/valkey-io/valkey-go v1.0.79
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)

require (
	github.com/yuin/gopher-lua v1.1.1 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
