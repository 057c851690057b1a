"""Heterogeneity-aware round-based schedulers: Gavel (OSDI'20) max-min fairness and Hadar
(task-level primal-dual, Sultana et al.), on measured per-GPU-type throughputs."""
