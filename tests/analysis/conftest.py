"""Shared fixtures and constants of the analysis tests."""

from __future__ import annotations

from privgame.analysis.accounting import dpsgd_claim, gaussian_claim, pure_composition_claim, randomized_response_claim

# The claims of the four kinds of mechanism, shared by test_families.py and test_estimators.py.
RR = randomized_response_claim(1.0)
GAUSSIAN = gaussian_claim(1.0)
DPSGD = dpsgd_claim(1.1, 0.01, 200)
PRIVBAYES = pure_composition_claim([0.3, 0.7])
