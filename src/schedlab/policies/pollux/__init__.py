"""Pollux (Qiao et al., OSDI'21), a Castor §9.1 baseline: the goodput model and batch-size
adaptation (:mod:`.goodput`) and periodic goodput-driven reallocation of GPUs through the
engine's elastic resize (:mod:`.pollux`)."""
