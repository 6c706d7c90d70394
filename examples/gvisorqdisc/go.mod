module github.com/aqmkit/aqmkit/examples/gvisorqdisc

go 1.25.5

require (
	github.com/aqmkit/aqmkit v0.0.0
	github.com/stretchr/testify v1.12.1
	gvisor.dev/gvisor v0.0.0-20260224225140-573d5e7127a8
)

require (
	github.com/google/btree v1.1.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20231110203233-9a3e6036ecaa // indirect
	golang.org/x/sys v0.36.0 // indirect
	golang.org/x/time v0.12.0 // indirect
)

replace github.com/aqmkit/aqmkit => ../..
