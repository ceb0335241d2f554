"""Hypothesis settings profiles: ``ci`` (default), ``dev`` and ``nightly``, selected by an environment variable.

``ci`` is deterministic (derandomized, no example database) and fast; ``dev`` explores more, randomly;
``nightly`` runs at least 100,000 examples per property with no deadline.  Select one with
``RL_CONTRACTS_HYPOTHESIS_PROFILE=nightly pytest property_tests``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["PROFILES", "PROFILE_ENV_VAR", "load_profile", "register_profiles"]

PROFILE_ENV_VAR = "RL_CONTRACTS_HYPOTHESIS_PROFILE"
"""Environment variable naming the profile :func:`load_profile` selects."""

PROFILES = ("ci", "dev", "nightly")
"""The registered profile names; the first is the default."""

_SLOW_DATA = [HealthCheck.too_slow, HealthCheck.data_too_large]


def register_profiles() -> None:
    """Register the three profiles with Hypothesis (idempotent)."""
    settings.register_profile(
        "ci",
        max_examples=60,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=_SLOW_DATA,
    )
    settings.register_profile("dev", max_examples=300, deadline=None, suppress_health_check=_SLOW_DATA)
    settings.register_profile(
        "nightly",
        max_examples=100_000,
        deadline=None,
        database=None,
        suppress_health_check=[*_SLOW_DATA, HealthCheck.filter_too_much],
    )


def load_profile(name: str | None = None) -> str:
    """Register the profiles and load ``name`` (default: ``$RL_CONTRACTS_HYPOTHESIS_PROFILE`` or ``ci``).

    Returns the loaded name; an unknown name raises ``ValueError`` listing the known ones.
    """
    register_profiles()
    chosen = name or os.environ.get(PROFILE_ENV_VAR) or PROFILES[0]
    if chosen not in PROFILES:
        raise ValueError(f"unknown Hypothesis profile {chosen!r}; expected one of {list(PROFILES)}")
    settings.load_profile(chosen)
    return chosen
