// Package cake implements CAKE, Common Applications Kept Enhanced
// (Høiland-Jørgensen, Täht and Morton, "Piece of CAKE", 2018; Linux
// sch_cake).
package cake
