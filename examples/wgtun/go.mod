module github.com/aqmkit/aqmkit/examples/wgtun

go 1.25

require (
	github.com/aqmkit/aqmkit v0.0.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.32.0
	golang.zx2c4.com/wireguard v0.0.0-20260522210424-ecfc5a8d5446
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.37.0 // indirect
	golang.org/x/net v0.39.0 // indirect
	golang.zx2c4.com/wintun v0.0.0-20230126152724-0fa3db229ce2 // indirect
)

replace github.com/aqmkit/aqmkit => ../..
