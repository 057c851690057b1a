"""Analyses of workloads: the trace characterisation of Hu et al. (SC '21, Helios) §3.

:mod:`schedlab.analysis.tables` computes the characterisations with pandas and numpy; the plots,
the report sections and the page import matplotlib, so import them directly, e.g.
``from schedlab.analysis.characterize import characterize``.
"""
