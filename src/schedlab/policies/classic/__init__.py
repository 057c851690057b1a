"""The classic baselines: FIFO, SJF, SRTF, SRSF (:mod:`.orders`), Tiresias and the YARN capacity scheduler."""
