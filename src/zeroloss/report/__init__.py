"""The HTML report and its matplotlib figures (reads result files only)."""
