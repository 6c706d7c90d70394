package aqm

import "fmt"

func formatValue(v any) string { return fmt.Sprint(v) }
