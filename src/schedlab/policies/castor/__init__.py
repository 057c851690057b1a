"""Castor (Luo et al., "Castor: Optimizing Deep Learning Job Scheduling in Multi-Tenant GPU
Clusters via Intelligent Colocation"): SJF-BSBF and its baselines SJF-FFS and SSF
(:mod:`.sjf_bsbf`, :mod:`.build`), Theorem 1 and Algorithm 2 (:mod:`.pair`), interference
ratios and their predictor (:mod:`.interference`, :mod:`.tree`). The iteration-time model
(Eq. 1-3) and the colocated rates are in :mod:`schedlab.sim.iteration` and
:mod:`schedlab.sim.colocation`."""
