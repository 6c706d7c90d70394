module github.com/aqmkit/aqmkit/bench/tuncost

go 1.25

require (
	github.com/aqmkit/aqmkit/lab v0.0.0
	golang.zx2c4.com/wireguard v0.0.0-20260522210424-ecfc5a8d5446
)

require (
	github.com/aqmkit/aqmkit v0.0.0 // indirect
	golang.org/x/net v0.39.0 // indirect
	golang.org/x/sys v0.35.0 // indirect
	golang.zx2c4.com/wintun v0.0.0-20230126152724-0fa3db229ce2 // indirect
)

replace (
	github.com/aqmkit/aqmkit => ../../
	github.com/aqmkit/aqmkit/lab => ../../lab
)
