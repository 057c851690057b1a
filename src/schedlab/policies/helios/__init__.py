"""Helios (Hu et al., SC '21): quasi-shortest-service-first scheduling (:mod:`.qssf`)."""
