module github.com/aqmkit/aqmkit/bench/peers

go 1.25

require github.com/aqmkit/aqmkit v0.0.0

require (
	github.com/google/btree v1.1.2 // indirect
	golang.org/x/sys v0.26.0 // indirect
	golang.org/x/time v0.7.0 // indirect
	gvisor.dev/gvisor v0.0.0-20250503011706-39ed1f5ac29c
)

replace github.com/aqmkit/aqmkit => ../..
