// Package osu prints distbench's results as the OSU micro-benchmarks
// (v7.4) print theirs: the point-to-point tables of osu_latency, osu_bw
// and osu_bibw, and the collective latency tables of osu_allreduce and
// its siblings, with OSU's widths (FIELD_WIDTH, FLOAT_PRECISION) and
// OSU's definitions of the figures, so that scripts written for OSU's
// output read distbench's and the figures mean the same.
package osu
