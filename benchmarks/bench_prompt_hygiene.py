"""The cost of the new hand-off checks, each beside the obvious baseline measured in the same run.

Run from the repository root::

    python benchmarks/bench_prompt_hygiene.py [--rounds N]

Cases (the figure is the median round; the cases run in a new random order every round, so machine noise and
each other's allocations hit them alike):

- **fingerprint**: ``tokenizer_fingerprint`` of a 151,665-token vocabulary with 200 added tokens and a chat
  template (Qwen2.5's sizes), against the baseline ``sha256(json.dumps(sorted(get_vocab().items())))``, a digest of
  the vocabulary alone;
- **turn count**: ``splice_prefix_tokens(check_turn_count=True)`` on a 128k-token model prefix of 64 turns,
  against the same call without the check.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import random
import statistics
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from rl_contracts.prompts import tokenizer_fingerprint
from rl_contracts.splice import splice_prefix_tokens
from rl_contracts.testing.chat_tokenizer import AddedToken

__all__ = ["main"]

VOCABULARY = 151_665
TURN_TOKENS = 2_048
TURNS = 64
EOS = 2


def _tokenizer() -> SimpleNamespace:
    vocab = {f"tok{index:06d}": index for index in range(VOCABULARY)}
    added = {VOCABULARY - 200 + i: AddedToken(f"tok{VOCABULARY - 200 + i:06d}") for i in range(200)}
    return SimpleNamespace(
        get_vocab=lambda: dict(vocab),
        bos_token_id=None,
        eos_token_id=EOS,
        pad_token_id=EOS,
        unk_token_id=None,
        all_special_ids=sorted(added),
        chat_template="{% for m in messages %}{{ m['content'] }}{% endfor %}" * 20,
        added_tokens_decoder=added,
    )


def _splice_inputs() -> dict[str, Any]:
    turn = [7] * (TURN_TOKENS - 1) + [EOS]
    model = turn * TURNS
    template_prefix = [8] * (TURN_TOKENS - 1) + [EOS]
    return {
        "model_prefix_token_ids": model,
        "template_prefix_token_ids": template_prefix * TURNS,
        "template_token_ids": template_prefix * TURNS + [9, 9, EOS, 10],
    }


def _time(call: Callable[[], object], timings: list[float]) -> None:
    gc.collect()  # the fingerprint's large dicts must not be collected inside another case's timing
    start = time.perf_counter()
    call()
    timings.append(time.perf_counter() - start)


def main() -> None:
    """Print each case's median time, its baseline's and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    tokenizer = _tokenizer()
    inputs = _splice_inputs()

    def baseline_digest() -> str:
        return hashlib.sha256(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()

    cases: dict[str, Callable[[], object]] = {
        "fingerprint": lambda: tokenizer_fingerprint(tokenizer),
        "vocabulary digest (baseline)": baseline_digest,
        "splice, check_turn_count=True": lambda: splice_prefix_tokens(
            check_turn_count=True, eos_token_id=EOS, **inputs
        ),
        "splice (baseline)": lambda: splice_prefix_tokens(eos_token_id=EOS, **inputs),
    }
    timings: dict[str, list[float]] = {name: [] for name in cases}
    order = list(cases)
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)  # no case always runs right after another's allocations
        for name in order:
            _time(cases[name], timings[name])
    medians = {name: statistics.median(values) * 1e3 for name, values in timings.items()}
    for case, baseline in (
        ("fingerprint", "vocabulary digest (baseline)"),
        ("splice, check_turn_count=True", "splice (baseline)"),
    ):
        print(
            f"{case}: {medians[case]:.1f} ms; {baseline}: {medians[baseline]:.1f} ms; "
            f"ratio {medians[case] / medians[baseline]:.2f}x"
        )


if __name__ == "__main__":
    main()
