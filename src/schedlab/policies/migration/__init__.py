"""Policies built on job migration: defragmentation of gang placements (:mod:`.defrag`)."""
