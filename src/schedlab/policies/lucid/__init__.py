"""Lucid (Hu et al., ASPLOS'23), a Castor §9.1 baseline: priority by estimated GPU time and
affine-pair packing by sharing score (:mod:`.lucid`), the sharing scores (:mod:`.scores`) and
its registry entry (:mod:`.build`)."""
