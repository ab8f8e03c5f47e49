"""The what-if simulator: scenarios, virtual clock and kubelet, the run loop, results and reports."""
