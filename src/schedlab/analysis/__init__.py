"""Analyses of workloads: the trace characterisation of Hu et al. (SC '21, Helios) §3.

The plotting code lives in :mod:`schedlab.analysis.characterize`, which imports matplotlib;
import it directly (``from schedlab.analysis.characterize import characterize``).
"""
