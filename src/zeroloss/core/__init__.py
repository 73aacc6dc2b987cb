"""The vocabulary every layer shares: the model and line-rate arithmetic, the run's settings, frames and streams,
latency, outages, the zero-loss search, OVS facts, CPU lists, errors and the one file reader and writer.
No processes."""
