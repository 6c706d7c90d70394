module github.com/aqmkit/aqmkit/lab

go 1.25

require github.com/aqmkit/aqmkit v0.0.0

replace github.com/aqmkit/aqmkit => ../
