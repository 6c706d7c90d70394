package cake

import "github.com/aqmkit/aqmkit/aqm"

// A shaped CAKE tells a driver when to come back through aqm.Paced.
var _ aqm.Paced = (*Queue[int])(nil)
