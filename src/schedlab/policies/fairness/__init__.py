"""Multi-tenant fairness schedulers on leases: ASTRAEA (long-term GPU-time fairness, two-phase
tenant-then-job selection) and the fair-share baselines it is compared with (weighted max-min
fair share, Themis-style finish-time fairness, Gandiva_fair-style GPU-time tickets).

All four share :class:`~schedlab.policies.fairness.lease.LeaseScheduler`: a running job holds
its GPUs for a lease term; at lease ends and whenever GPUs are free, a round ranks tenants and
jobs and hands out the GPUs. See ``docs/fairness.md``.
"""
