"""The ``rl_contracts`` pytest plugin: profiles registered, loaded only when selected, harmless without Hypothesis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from rl_contracts.testing import PROFILE_ENV_VAR, PROFILES
from rl_contracts.testing.profiles import load_profile, profile_name, selected_profile

_GLUE = "LIMIT = 1000\n"
"""A local non-test module: Hypothesis caches the constants of such modules under ``.hypothesis/constants``."""

_PROBE = """
from hypothesis import given, settings, strategies as st

import glue


def test_show_profile():
    current = settings.default
    print(f"PROFILE={settings.get_current_profile_name()} EXAMPLES={current.max_examples} "
          f"DERANDOMIZE={current.derandomize} DATABASE={current.database is not None}")


@given(st.integers(0, glue.LIMIT), st.text(max_size=3))
def test_generates(number, text):
    assert 0 <= number <= glue.LIMIT and len(text) <= 3
"""


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None, ini: str = "") -> tuple[int, str]:
    """Run pytest on the probe in ``tmp_path`` (its own rootdir) in a fresh interpreter; return (rc, output)."""
    (tmp_path / "test_settings.py").write_text(_PROBE)
    (tmp_path / "glue.py").write_text(_GLUE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n" + ini)
    clean = {
        k: v for k, v in os.environ.items() if k not in (PROFILE_ENV_VAR, "HYPOTHESIS_STORAGE_DIRECTORY")
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *args],
        cwd=tmp_path,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.returncode, result.stdout + result.stderr


def _profile(output: str) -> str:
    line = next(line for line in output.splitlines() if line.startswith("PROFILE="))
    return line


def test_no_selection_changes_nothing(tmp_path: Path) -> None:
    """With no profile selected, the run has the same settings as with the plugin disabled."""
    rc_with, with_plugin = _run(tmp_path)
    rc_without, without_plugin = _run(tmp_path, "-p", "no:rl_contracts")
    assert (rc_with, rc_without) == (0, 0), with_plugin + without_plugin
    assert _profile(with_plugin) == _profile(without_plugin)
    assert "rl-contracts" not in _profile(with_plugin)
    assert (tmp_path / ".hypothesis").is_dir()  # what the ci profile avoids (next test)


def test_hypothesis_option_accepts_the_ci_profile_and_writes_no_storage(tmp_path: Path) -> None:
    """``--hypothesis-profile=rl-contracts-ci`` loads the derandomized profile and leaves no ``.hypothesis/``."""
    rc, output = _run(tmp_path, "--hypothesis-profile=rl-contracts-ci")
    assert rc == 0, output
    assert _profile(output) == "PROFILE=rl-contracts-ci EXAMPLES=60 DERANDOMIZE=True DATABASE=False"
    assert not (tmp_path / ".hypothesis").exists()


@pytest.mark.parametrize(
    ("name", "expected"), [("nightly", "rl-contracts-nightly"), ("rl-contracts-dev", "rl-contracts-dev")]
)
def test_environment_variable_selects_a_profile(tmp_path: Path, name: str, expected: str) -> None:
    """``RL_CONTRACTS_HYPOTHESIS_PROFILE`` loads the named profile, by short or full name."""
    rc, output = _run(tmp_path, "-k", "show_profile", env={PROFILE_ENV_VAR: name})
    assert rc == 0, output
    assert _profile(output).startswith(f"PROFILE={expected} ")


def test_precedence_option_then_environment_then_ini(tmp_path: Path) -> None:
    """The ini option is the default, the environment variable beats it, ``--hypothesis-profile`` beats both."""
    ini = "rl_contracts_hypothesis_profile = rl-contracts-explore\n"
    runs = {
        "ini": _run(tmp_path, "-k", "show_profile", ini=ini),
        "env": _run(tmp_path, "-k", "show_profile", ini=ini, env={PROFILE_ENV_VAR: "ci"}),
        "option": _run(
            tmp_path,
            "-k",
            "show_profile",
            "--hypothesis-profile=rl-contracts-dev",
            ini=ini,
            env={PROFILE_ENV_VAR: "ci"},
        ),
    }
    assert all(rc == 0 for rc, _ in runs.values()), runs
    assert _profile(runs["ini"][1]).startswith("PROFILE=rl-contracts-explore EXAMPLES=100 DERANDOMIZE=False")
    assert _profile(runs["env"][1]).startswith("PROFILE=rl-contracts-ci ")
    assert _profile(runs["option"][1]).startswith("PROFILE=rl-contracts-dev ")


def test_unknown_environment_profile_is_a_usage_error(tmp_path: Path) -> None:
    """An unknown name in the environment variable stops the run (exit 4) and lists the known profiles."""
    rc, output = _run(tmp_path, env={PROFILE_ENV_VAR: "fast"})
    assert rc == 4
    assert "'fast'" in output
    assert all(name in output for name in PROFILES)


def test_plugin_is_harmless_without_hypothesis(tmp_path: Path) -> None:
    """Where ``import hypothesis`` fails, a selected profile is ignored and plain tests run."""
    fake = tmp_path / "fake" / "hypothesis"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('hypothesis is not installed here')\n")
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert sum([1, 1]) == 2\n")
    rc, output = _run(
        tmp_path,
        "-p",
        "no:hypothesispytest",
        "test_plain.py",
        env={"PYTHONPATH": str(tmp_path / "fake"), PROFILE_ENV_VAR: "ci"},
    )
    assert rc == 0, output
    assert "1 passed" in output


def test_profile_names_resolve_short_and_full_forms() -> None:
    """Short names map to the registered names; anything else is a ValueError naming the known ones."""
    assert [profile_name(name) for name in ("ci", "dev", "nightly", "explore")] == list(PROFILES)
    assert profile_name("rl-contracts-ci") == "rl-contracts-ci"
    with pytest.raises(ValueError, match="rl-contracts-nightly"):
        profile_name("rl-contracts-fast")


def test_selected_profile_reads_the_environment_then_the_default() -> None:
    """The environment variable wins; an empty one falls back to the default; neither gives None."""
    assert selected_profile({PROFILE_ENV_VAR: "dev"}, default="ci") == "rl-contracts-dev"
    assert selected_profile({PROFILE_ENV_VAR: ""}, default="ci") == "rl-contracts-ci"
    assert selected_profile({}) is None


def test_load_profile_loads_the_named_profile() -> None:
    """Outside pytest, ``load_profile`` registers and loads a profile by short name (this run's is restored)."""
    previous = settings.get_current_profile_name()
    try:
        assert load_profile("nightly") == "rl-contracts-nightly"
        assert settings().max_examples == 100_000
    finally:
        settings.load_profile(previous)
    assert settings.get_current_profile_name() == previous
