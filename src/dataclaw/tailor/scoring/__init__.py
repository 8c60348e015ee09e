"""Scoring Tailor's data (paper §3.5, B.1, Appendix F): the benchmark metric (:mod:`.bench`), the GRPO
rewards (:mod:`.rewards`) and the amortised cost model (:mod:`.cost`)."""
