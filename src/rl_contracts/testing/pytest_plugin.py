"""pytest plugin (entry point ``rl_contracts`` in ``pytest11``): the rl_contracts Hypothesis profiles.

Where Hypothesis is installed, it registers the profiles of :mod:`rl_contracts.testing.profiles`, so Hypothesis'
own ``--hypothesis-profile=rl-contracts-ci`` accepts them, and loads one when it is selected:
``--hypothesis-profile`` wins, else ``$RL_CONTRACTS_HYPOTHESIS_PROFILE``, else the ini option
``rl_contracts_hypothesis_profile``.  With none of them the run is exactly what it would be without the plugin;
without Hypothesis the plugin does nothing at all (entry points are not per-extra).  Disable it with
``-p no:rl_contracts``.

The ``rl-contracts-ci`` profile keeps no example database; while it is loaded the plugin also points Hypothesis'
storage directory (its per-source constants cache) at a temporary directory removed at the end of the run, so a
CI run writes no ``.hypothesis/`` into the project tree.  A ``HYPOTHESIS_STORAGE_DIRECTORY`` set by the user wins.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from .profiles import PROFILE_ENV_VAR, PROFILE_INI_OPTION, register_profiles, selected_profile

__all__ = ["pytest_addoption", "pytest_configure", "pytest_unconfigure"]

_STORAGE_KEY = pytest.StashKey[str]()

try:
    import hypothesis  # noqa: F401  (only whether it imports)
except ImportError:  # the testing extra is not installed
    _HAVE_HYPOTHESIS = False
else:
    _HAVE_HYPOTHESIS = True
    # At import, before any conftest.py runs, so a conftest may load the profiles by name too.
    register_profiles()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Declare the ini option naming a project's default profile (the environment variable wins over it)."""
    parser.addini(
        PROFILE_INI_OPTION,
        help=f"rl_contracts Hypothesis profile to load when neither --hypothesis-profile nor ${PROFILE_ENV_VAR} "
        "names one (e.g. rl-contracts-ci)",
        default="",
    )


def _chosen(config: pytest.Config) -> tuple[str | None, bool]:
    """The selected profile and whether this plugin must load it (``False``: Hypothesis' option loads it)."""
    option = config.getoption("hypothesis_profile", default=None)
    if option:
        return str(option), False
    try:
        return selected_profile(default=str(config.getini(PROFILE_INI_OPTION)) or None), True
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Load the selected profile (before Hypothesis' own plugin applies its options on top of it)."""
    if not _HAVE_HYPOTHESIS:
        return
    from hypothesis import settings

    chosen, load = _chosen(config)
    if load and chosen is not None:
        settings.load_profile(chosen)
    if chosen == "rl-contracts-ci":
        _redirect_storage(config)


def _redirect_storage(config: pytest.Config) -> None:
    """Point Hypothesis' storage directory at a fresh temporary one, unless the user set one."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return
    from hypothesis.configuration import set_hypothesis_home_dir

    directory = tempfile.mkdtemp(prefix="rl-contracts-hypothesis-")
    set_hypothesis_home_dir(directory)
    config.stash[_STORAGE_KEY] = directory


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the temporary storage directory made for the ``rl-contracts-ci`` profile."""
    directory = config.stash.get(_STORAGE_KEY, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
