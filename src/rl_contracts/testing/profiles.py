"""Hypothesis settings profiles ``rl-contracts-ci``, ``-dev``, ``-nightly`` and ``-explore``.

The pytest plugin (:mod:`rl_contracts.testing.pytest_plugin`, installed with the ``testing`` extra) registers
them whenever Hypothesis is installed, so ``pytest --hypothesis-profile=rl-contracts-ci`` works in any project;
registering loads nothing.  A profile is loaded only when selected: by ``--hypothesis-profile``, else by
``$RL_CONTRACTS_HYPOTHESIS_PROFILE``, else by the pytest ini option ``rl_contracts_hypothesis_profile``.  The
environment variable and the ini option also accept the short names (``ci``, ``dev``, ``nightly``,
``explore``).

- ``rl-contracts-ci``: 60 examples, derandomized, no example database, no deadline: deterministic and fast;
- ``rl-contracts-dev``: 300 random examples, with Hypothesis' default database (local exploration);
- ``rl-contracts-nightly``: 100,000 random examples, no database, no deadline (long runs);
- ``rl-contracts-explore``: 100 random examples, no database: the bounded randomized pass of ``.ci/explore``,
  reproduced with ``--hypothesis-seed``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = [
    "PROFILES",
    "PROFILE_ENV_VAR",
    "PROFILE_INI_OPTION",
    "load_profile",
    "profile_name",
    "register_profiles",
    "selected_profile",
]

PROFILE_ENV_VAR = "RL_CONTRACTS_HYPOTHESIS_PROFILE"
"""Environment variable naming the profile to load (a full or a short name)."""

PROFILE_INI_OPTION = "rl_contracts_hypothesis_profile"
"""pytest ini option naming the profile a project loads by default (the environment variable wins over it)."""

PROFILES = ("rl-contracts-ci", "rl-contracts-dev", "rl-contracts-nightly", "rl-contracts-explore")
"""The registered profile names."""

_PREFIX = "rl-contracts-"


def register_profiles() -> None:
    """Register the four profiles with Hypothesis (idempotent); the current profile is left as it is.

    Hypothesis is imported here, not at module level, so the pytest plugin loads where it is not installed.
    """
    from hypothesis import HealthCheck, settings

    slow_data = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile(
        "rl-contracts-ci",
        max_examples=60,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=slow_data,
    )
    settings.register_profile(
        "rl-contracts-dev", max_examples=300, deadline=None, suppress_health_check=slow_data
    )
    settings.register_profile(
        "rl-contracts-nightly",
        max_examples=100_000,
        deadline=None,
        database=None,
        suppress_health_check=[*slow_data, HealthCheck.filter_too_much],
    )
    settings.register_profile(  # the ci profile with random data: what .ci/explore runs
        "rl-contracts-explore",
        parent=settings.get_profile("rl-contracts-ci"),
        max_examples=100,
        derandomize=False,
    )


def profile_name(name: str) -> str:
    """The registered name for ``name``, a full name (``rl-contracts-ci``) or a short one (``ci``).

    Raises ``ValueError`` listing the known names for anything else.
    """
    full = name if name.startswith(_PREFIX) else _PREFIX + name
    if full not in PROFILES:
        raise ValueError(
            f"unknown rl_contracts Hypothesis profile {name!r}; expected one of {list(PROFILES)}"
        )
    return full


def selected_profile(environ: Mapping[str, str] | None = None, default: str | None = None) -> str | None:
    """The profile selected by ``$RL_CONTRACTS_HYPOTHESIS_PROFILE`` (in ``environ``, default ``os.environ``).

    Falls back to ``default`` when the variable is unset or empty; returns ``None`` when neither names one.
    Raises ``ValueError`` for an unknown name (see :func:`profile_name`).
    """
    chosen = (os.environ if environ is None else environ).get(PROFILE_ENV_VAR) or default
    return profile_name(chosen) if chosen else None


def load_profile(name: str | None = None) -> str | None:
    """Register the profiles and load ``name``, else the one :func:`selected_profile` names, else none.

    For runs outside pytest (under pytest the plugin does this).  Returns the loaded name, or ``None`` when
    nothing was selected (Hypothesis' current profile is then unchanged).
    """
    from hypothesis import settings

    register_profiles()
    chosen = profile_name(name) if name else selected_profile()
    if chosen is not None:
        settings.load_profile(chosen)
    return chosen
