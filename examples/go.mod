module github.com/aqmkit/aqmkit/examples

go 1.25

require (
	github.com/aqmkit/aqmkit v0.0.0
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace github.com/aqmkit/aqmkit => ../
