module github.com/flowfabric/flowfabric

go 1.26

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/tidwall/btree v1.8.2 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
