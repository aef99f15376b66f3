package results

// GPUStats is one GPU's telemetry (NVML) over a point's timed iterations,
// sampled by the rank 0 worker for every GPU of its host: at the start, at
// the end and every SampleEvery between. Absent where there is no driver.
// Means are over the samples; NVLink's are its byte counters' difference
// over the point's time, summed over links.
type GPUStats struct {
	Index   int    `json:"index"`
	Name    string `json:"name,omitempty"`
	Samples int    `json:"samples"`

	UtilPct      float64 `json:"util_pct"` // GPU utilisation, %: mean
	UtilPctMax   float64 `json:"util_pct_max"`
	MemUsedBytes uint64  `json:"mem_used_bytes"` // most
	PowerW       float64 `json:"power_w"`        // mean
	PowerWMax    float64 `json:"power_w_max"`
	SMClockMHz   float64 `json:"sm_clock_mhz"`  // mean
	PCIeTxBps    float64 `json:"pcie_tx_bps"`   // bytes/s, mean of NVML's 20 ms windows
	PCIeRxBps    float64 `json:"pcie_rx_bps"`   //
	NVLinkTxBps  float64 `json:"nvlink_tx_bps"` // bytes/s over the point
	NVLinkRxBps  float64 `json:"nvlink_rx_bps"` //
	// Unsupported names what this GPU's driver would not give (left 0).
	Unsupported []string `json:"unsupported,omitempty"`
}
