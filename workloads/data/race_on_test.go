//go:build race

package data

// raceEnabled lets tests skip work that the race detector makes slow but
// does not make any more thorough (decompressing 100 MB of real data).
const raceEnabled = true
