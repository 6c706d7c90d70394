module github.com/aqmkit/aqmkit

go 1.26

require (
	github.com/leanovate/gopter v0.2.11 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)
