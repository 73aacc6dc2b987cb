"""Where a trial's frames were lost and why: the loss ledger (hop by hop, from counter deltas) and its diagnosis.
Pure."""
