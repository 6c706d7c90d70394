module github.com/aqmkit/aqmkit/bench

go 1.25

require github.com/aqmkit/aqmkit v0.0.0

replace github.com/aqmkit/aqmkit => ../
