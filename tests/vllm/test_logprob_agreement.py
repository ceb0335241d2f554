"""Training–inference agreement (SPEC §9) between real vLLM and a transformers learner on the same weights.

vLLM samples with the tiny local models; the "learner" recomputes the logprobs of exactly those tokens with
transformers on the same safetensors in float32, as a trainer's ``prev_logprobs`` pass does.  The cases of issue 22:

(a) agreement passes with the default bounds and with a tight bound measured here (``TIGHT``);
(b) a learner one optimizer step ahead of the engine (a refit that did not apply) fails "uniform";
(c) with ``logprobs_mode="processed_logprobs"`` at temperature 0.7 a learner that ignores the temperature fails and
    one that applies it passes; with ``raw_logprobs`` the reverse;
(d) learner logprobs off by one position fail "shift";
(e) one sequence recomputed on a changed prompt fails "isolated", naming that sequence;
(f) on 0.30 with router replay, the learner router's top-k against vLLM's routes, per layer, and a perturbed router
    that lowers it.

The shipped dense model is degenerate for logprobs (its tied N(0, 1) embeddings make every sampled token's
probability 1.0 in float32), so the processed-logprobs cases run on ``soft_dense``: the same model with its tied
embeddings scaled by ``SOFT_EMBEDDING_SCALE`` (sampled-token logprobs around -0.9, so temperature and context
matter), written to a temporary directory and served by one more in-process engine with
``logprobs_mode="processed_logprobs"``.  The raw-logprobs cases, (b) and (f) use the session's MoE engine (raw
logprobs, its default; its near-uniform random weights make every token sensitive to a weight change).  Each case
prints its figures (``logprob agreement: ...``) to the terminal, past pytest's capture.
"""

from __future__ import annotations

import copy
import os
import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from vllm import LLM, SamplingParams

from rl_contracts.errors import LogprobMismatchError
from rl_contracts.logprobs import MismatchBounds, MismatchReport, check_logprob_agreement, logprob_mismatch
from rl_contracts.routed_experts import pad_and_align_routed_expert_indices, routing_agreement
from rl_contracts.testing import assert_contract_error

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import transformers  # type: ignore[import-not-found, unused-ignore]

pytestmark = pytest.mark.vllm

TEMPERATURE = 0.7
SOFT_EMBEDDING_SCALE = 0.07
LEARNING_RATE = 1e-3
"""The Adam step the learner takes in (b) and the engine never receives."""
CHANGED_SEQUENCE = 5
TIGHT = MismatchBounds(
    max_mult_prob_error=1.00001,
    max_seq_mult_prob_error=1.00001,
    max_abs_diff=1e-5,
    max_gen_kl=1e-10,
    min_token_ess=0.99999,
)
"""The tight bound, about 5x the largest float32 differences measured on both releases: max |Δ| 1.9e-6
(soft_dense, processed logprobs at 0.7) and 9.5e-7 (MoE, raw), mult_prob_error <= 1 + 1.8e-7, the worst sequence's
<= 1 + 3.3e-7, gen_kl <= 4.3e-14."""
_WORDS = [
    "the",
    "quick",
    "router",
    "replay",
    "expert",
    "token",
    "prompt",
    "cache",
    "hello",
    "world",
    "fox",
    "dog",
]
PROMPTS = [" ".join(_WORDS[(7 * i + 3 * j) % len(_WORDS)] for j in range(3 + i % 6)) for i in range(16)]
MAX_TOKENS = [12 + (5 * i) % 13 for i in range(len(PROMPTS))]
"""Output lengths 12-24: the batch is padded, and padding is masked out."""
_ENGINE_ARGS: dict[str, Any] = {
    "dtype": "float32",
    "enforce_eager": True,
    "max_model_len": 256,
    "max_num_seqs": 4,
    "seed": 0,
    "distributed_executor_backend": "uni",
}


def _model_dir(name: str) -> Path:
    root = os.environ.get("RL_CONTRACTS_VLLM_MODELS")
    if not root or not (Path(root) / name / "config.json").is_file():
        pytest.fail(f"tiny model {name!r} is missing; run the tier with `bash .ci/vllm_tier`")
    return Path(root) / name


def _load(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()


@dataclass(frozen=True)
class Rollout:
    """What vLLM returned for ``PROMPTS``: prompt and output ids, and vLLM's logprobs padded to ``[B, T]``."""

    prompt_ids: list[list[int]]
    token_ids: list[list[int]]
    generation: torch.Tensor
    mask: torch.Tensor
    routes: list[np.ndarray[Any, Any] | None]


def _sampling() -> list[SamplingParams]:
    return [
        SamplingParams(temperature=TEMPERATURE, max_tokens=n, logprobs=0, seed=11 + i, ignore_eos=True)
        for i, n in enumerate(MAX_TOKENS)
    ]


def _rollout(llm: Any) -> Rollout:
    outputs = llm.generate(PROMPTS, _sampling(), use_tqdm=False)
    width = max(MAX_TOKENS)
    generation = torch.zeros(len(outputs), width)  # NeMo RL pads with 0
    mask = torch.zeros(len(outputs), width)
    prompt_ids, token_ids, routes = [], [], []
    for row, output in enumerate(outputs):
        completion = output.outputs[0]
        tokens = list(completion.token_ids)
        values = [entry[token].logprob for token, entry in zip(tokens, completion.logprobs, strict=True)]
        generation[row, : len(tokens)] = torch.tensor(values)
        mask[row, : len(tokens)] = 1.0
        prompt_ids.append(list(output.prompt_token_ids))
        token_ids.append(tokens)
        routes.append(getattr(completion, "routed_experts", None))
    return Rollout(prompt_ids, token_ids, generation, mask, routes)


@pytest.fixture(scope="session")
def soft_dense(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dense model with its tied embeddings scaled by ``SOFT_EMBEDDING_SCALE``, saved with its tokenizer."""
    source = _model_dir("dense")
    target = tmp_path_factory.mktemp("soft_dense")
    model = _load(source)
    with torch.no_grad():
        model.get_input_embeddings().weight.mul_(SOFT_EMBEDDING_SCALE)
    model.save_pretrained(str(target), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (source / name).is_file():
            shutil.copy(source / name, target / name)
    return target


_KEEP_ALIVE: list[Any] = []
"""Engines created here live until the process ends: on 0.32 freeing an in-process engine tears down vLLM's global
parallel state, which breaks every other engine of the session."""


@pytest.fixture(scope="session")
def soft_engine(soft_dense: Path) -> Any:
    """An in-process ``LLM`` on ``soft_dense`` with ``logprobs_mode="processed_logprobs"`` (NeMo RL's default)."""
    llm = LLM(model=str(soft_dense), logprobs_mode="processed_logprobs", **_ENGINE_ARGS)
    _KEEP_ALIVE.append(llm)
    return llm


@pytest.fixture(scope="module")
def soft_rollout(soft_engine: Any) -> Rollout:
    """``PROMPTS`` sampled at ``TEMPERATURE`` on ``soft_dense``, processed logprobs."""
    return _rollout(soft_engine)


@pytest.fixture(scope="module")
def moe_rollout(moe_llm: Any) -> Rollout:
    """``PROMPTS`` sampled at ``TEMPERATURE`` on the MoE engine, raw logprobs (its default), routes on 0.30."""
    return _rollout(moe_llm)


@pytest.fixture(scope="module")
def soft_learner(soft_dense: Path) -> Any:
    """The learner of ``soft_dense``: transformers on the same weights, float32."""
    return _load(soft_dense)


@pytest.fixture(scope="module")
def moe_learner() -> Any:
    """The learner of the MoE model: transformers on the same weights, float32."""
    return _load(_model_dir("moe"))


def learner_logprobs(
    model: Any,
    rollout: Rollout,
    *,
    temperature: float = 1.0,
    prompts: dict[int, list[int]] | None = None,
) -> torch.Tensor:
    """The learner's logprobs of the rollout's tokens, ``[B, T]`` with NaN at padding (which must be masked).

    ``temperature`` divides the logits before the softmax; ``prompts`` replaces the prompt of some sequences.
    """
    result = torch.full(tuple(rollout.generation.shape), float("nan"))
    with torch.no_grad():
        for row, (prompt, tokens) in enumerate(zip(rollout.prompt_ids, rollout.token_ids, strict=True)):
            prompt = (prompts or {}).get(row, prompt)
            ids = torch.tensor([prompt + tokens])
            logits = model(ids).logits[0, len(prompt) - 1 : -1] / temperature
            chosen = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(tokens)[:, None])[:, 0]
            result[row, : len(tokens)] = chosen
    return result


def _show(capsys: pytest.CaptureFixture[str], case: str, report: MismatchReport) -> None:
    """Print a report's main figures to the terminal, past pytest's capture."""
    with capsys.disabled():
        print(
            f"\nlogprob agreement: {case}: n={report.tokens} sequences={report.sequences} "
            f"mult_prob_error={report.mult_prob_error:.9f} seq_max={report.seq_mult_prob_error_max:.9f} "
            f"max|diff|={report.abs_diff_max:.3g} p99={report.abs_diff_p99:.3g} gen_kl={report.gen_kl:.3g} "
            f"js={report.js_divergence:.3g} token_ess={report.token_ess:.9f}"
        )


def _failure(
    capsys: pytest.CaptureFixture[str], case: str, call: Callable[[], object]
) -> LogprobMismatchError:
    with pytest.raises(LogprobMismatchError) as info:
        call()
    error = info.value
    assert_contract_error(error)
    with capsys.disabled():
        print(
            f"\nlogprob agreement: {case}: likely_cause={error.likely_cause} exceeded={error.exceeded}\n  {error}"
        )
    return error


CASES = {
    "soft_dense processed_logprobs": ("soft_rollout", "soft_learner", TEMPERATURE),
    "moe raw_logprobs": ("moe_rollout", "moe_learner", 1.0),
}
"""Each engine, with the learner temperature that matches its logprobs_mode."""


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_agreement_passes_default_and_tight_bounds(
    request: pytest.FixtureRequest, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """(a) The learner with the engine's semantics agrees within the default and the tight bound."""
    rollout_name, learner_name, temperature = CASES[case]
    rollout: Rollout = request.getfixturevalue(rollout_name)
    learned = learner_logprobs(request.getfixturevalue(learner_name), rollout, temperature=temperature)
    report = check_logprob_agreement(rollout.generation, learned, rollout.mask)
    assert check_logprob_agreement(rollout.generation, learned, rollout.mask, bounds=TIGHT) == report
    assert report.tokens == sum(MAX_TOKENS)
    assert report.sequences == len(PROMPTS)
    assert report.outside_band == 0.0
    _show(capsys, f"(a) {case}, learner temperature {temperature}", report)


def test_b_weights_that_were_not_refit_fail_uniform(
    moe_rollout: Rollout, moe_learner: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """(b) The learner took an optimizer step the engine never received (a refit that did not apply): every
    sequence disagrees, cause "uniform"."""
    stepped = copy.deepcopy(moe_learner)
    optimizer = torch.optim.Adam(stepped.parameters(), lr=LEARNING_RATE)
    logprobs = []
    for prompt, tokens in zip(moe_rollout.prompt_ids, moe_rollout.token_ids, strict=True):
        logits = stepped(torch.tensor([prompt + tokens])).logits[0, len(prompt) - 1 : -1]
        logprobs.append(torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(tokens)[:, None])[:, 0])
    loss = -torch.cat(logprobs).mean()  # a policy-gradient step with every advantage positive
    torch.autograd.backward(loss)
    optimizer.step()
    stepped.eval()
    learned = learner_logprobs(stepped, moe_rollout)
    error = _failure(
        capsys,
        f"(b) learner one Adam step (lr {LEARNING_RATE}) ahead of the engine",
        lambda: check_logprob_agreement(moe_rollout.generation, learned, moe_rollout.mask),
    )
    assert error.likely_cause == "uniform"
    assert "max_mult_prob_error" in (error.exceeded or ())
    assert len(error.affected_sequences or ()) >= 0.9 * len(PROMPTS)
    assert error.report is not None
    assert error.report.mean_diff is not None
    assert error.report.mean_diff > 0  # the step raised the sampled tokens' probability


@pytest.mark.parametrize(
    ("case", "good", "bad"),
    [("soft_dense processed_logprobs", TEMPERATURE, 1.0), ("moe raw_logprobs", 1.0, TEMPERATURE)],
)
def test_c_temperature_semantics_follow_logprobs_mode(
    request: pytest.FixtureRequest, case: str, good: float, bad: float, capsys: pytest.CaptureFixture[str]
) -> None:
    """(c) processed_logprobs at 0.7 needs the learner to apply the temperature; raw_logprobs needs it not to."""
    rollout_name, learner_name, _ = CASES[case]
    rollout: Rollout = request.getfixturevalue(rollout_name)
    learner = request.getfixturevalue(learner_name)
    passing = check_logprob_agreement(
        rollout.generation, learner_logprobs(learner, rollout, temperature=good), rollout.mask
    )
    _show(capsys, f"(c) {case} at temperature {TEMPERATURE}, learner temperature {good}", passing)
    wrong = learner_logprobs(learner, rollout, temperature=bad)
    error = _failure(
        capsys,
        f"(c) {case} at temperature {TEMPERATURE}, learner temperature {bad}",
        lambda: check_logprob_agreement(rollout.generation, wrong, rollout.mask),
    )
    assert error.likely_cause == "uniform"
    assert error.report is not None
    assert error.report.mult_prob_error is not None
    assert error.report.mult_prob_error > 1.05


def test_d_logprobs_off_by_one_position_fail_shift(
    soft_rollout: Rollout, soft_learner: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """(d) Learner logprobs with an unsliced leading entry (one position late) fail with cause "shift"."""
    rollout = soft_rollout
    learned = learner_logprobs(soft_learner, rollout, temperature=TEMPERATURE)
    late = torch.cat([torch.zeros(learned.shape[0], 1), learned[:, :-1]], dim=1)  # learner[t + 1] is token t
    error = _failure(
        capsys,
        "(d) learner one position late",
        lambda: check_logprob_agreement(rollout.generation, late, rollout.mask),
    )
    assert error.likely_cause == "shift"
    assert "learner[t + 1] matches vLLM[t]" in str(error)


def test_e_one_changed_prompt_fails_isolated(
    soft_rollout: Rollout, soft_learner: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """(e) One sequence recomputed on a prompt whose last token changed fails "isolated" and names that sequence."""
    rollout = soft_rollout
    prompt = rollout.prompt_ids[CHANGED_SEQUENCE]
    other = next(token for token in prompt if token != prompt[-1])
    learned = learner_logprobs(
        soft_learner, rollout, temperature=TEMPERATURE, prompts={CHANGED_SEQUENCE: [*prompt[:-1], other]}
    )
    error = _failure(
        capsys,
        f"(e) sequence {CHANGED_SEQUENCE} recomputed on a changed prompt",
        lambda: check_logprob_agreement(rollout.generation, learned, rollout.mask),
    )
    assert error.likely_cause == "isolated"
    assert error.affected_sequences == (CHANGED_SEQUENCE,)
    assert error.sequence_index == CHANGED_SEQUENCE
    rest = torch.arange(len(PROMPTS)) != CHANGED_SEQUENCE
    others = logprob_mismatch(rollout.generation[rest], learned[rest], rollout.mask[rest])
    assert (
        check_logprob_agreement(rollout.generation[rest], learned[rest], rollout.mask[rest], bounds=TIGHT)
        == others
    )
    _show(capsys, "(e) the other sequences", others)


class _RouterTap:
    """Collects the top-k expert indices each MoE layer's router of a transformers qwen3_moe model chose."""

    def __init__(self, model: Any, top_k: int) -> None:
        self.routes: list[torch.Tensor] = []
        self.top_k = top_k
        self.handles = [layer.mlp.gate.register_forward_hook(self._hook) for layer in model.model.layers]

    def remove(self) -> None:
        """Detach the hooks from the model."""
        for handle in self.handles:
            handle.remove()

    def _hook(self, module: Any, inputs: Any, output: Any) -> None:
        del module, inputs
        if isinstance(output, tuple):  # transformers 5: (router_logits, router_scores, router_indices)
            indices = output[2]
        else:  # a plain linear gate returns logits
            indices = torch.topk(torch.softmax(output, dim=-1), self.top_k, dim=-1).indices
        self.routes.append(indices.reshape(-1, self.top_k))

    def run(self, model: Any, ids: list[int]) -> torch.Tensor:
        """The ``[tokens, layers, K]`` routes of one forward pass over ``ids``."""
        self.routes.clear()
        with torch.no_grad():
            model(torch.tensor([ids]))
        return torch.stack(self.routes, dim=1)


@pytest.mark.vllm_releases("0.30")
def test_f_routing_agreement_of_the_learner_router(
    moe_rollout: Rollout, moe_learner: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """(f) The learner router's top-k equals vLLM's replayed routes per layer; a perturbed router agrees less."""
    rollout = moe_rollout
    model = moe_learner
    top_k = int(model.config.num_experts_per_tok)
    width = max(len(p) + len(t) for p, t in zip(rollout.prompt_ids, rollout.token_ids, strict=True))

    def aligned(learner_model: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        tap = _RouterTap(learner_model, top_k)
        engine, learned, mask = [], [], []
        for row, (prompt, tokens) in enumerate(zip(rollout.prompt_ids, rollout.token_ids, strict=True)):
            ids = prompt + tokens
            completion = type("Completion", (), {"routed_experts": rollout.routes[row]})()
            routes = pad_and_align_routed_expert_indices(
                None, completion, valid_length=len(ids), padded_length=width, device="cpu"
            )
            assert routes is not None
            engine.append(routes)
            own = torch.full((width, *routes.shape[1:]), -1, dtype=torch.int64)
            own[: len(ids)] = tap.run(learner_model, ids)
            learned.append(own)
            mask.append(torch.arange(width) < len(ids) - 1)  # the last token has no route
        tap.remove()
        return torch.stack(engine), torch.stack(learned), torch.stack(mask)

    engine, learned, mask = aligned(model)
    agreement = routing_agreement(engine, learned, mask=mask)
    perturbed = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for layer in perturbed.model.layers:
            weight = layer.mlp.gate.weight
            weight.add_(torch.randn(weight.shape, generator=generator) * weight.std() * 0.5)
    _, moved, _ = aligned(perturbed)
    lowered = routing_agreement(engine, moved, mask=mask)
    with capsys.disabled():
        print(
            f"\nlogprob agreement: (f) routing: pairs={agreement.pairs} agreement={agreement.agreement} "
            f"exact_order={agreement.exact_order_agreement} per_layer={agreement.per_layer}; perturbed router: "
            f"agreement={lowered.agreement:.4f} per_layer="
            f"{tuple(round(v, 4) for v in lowered.per_layer if v is not None)}"
        )
    assert agreement.pairs == int(mask.sum()) * engine.shape[2]
    assert agreement.agreement is not None
    assert agreement.agreement >= 0.99
    assert lowered.agreement is not None
    assert lowered.agreement < agreement.agreement - 0.1
    assert all(
        low is not None and high is not None and low < high
        for low, high in zip(lowered.per_layer, agreement.per_layer, strict=True)
    )


def test_padding_values_never_matter(soft_rollout: Rollout, soft_learner: Any) -> None:
    """Real rollouts padded with NaN (learner) and 0 (vLLM) give the same report as the same rows trimmed."""
    rollout = soft_rollout
    learned = learner_logprobs(soft_learner, rollout, temperature=TEMPERATURE)
    padded = logprob_mismatch(rollout.generation, learned, rollout.mask)
    flat_g = torch.cat([rollout.generation[i, : len(t)] for i, t in enumerate(rollout.token_ids)])
    flat_l = torch.cat([learned[i, : len(t)] for i, t in enumerate(rollout.token_ids)])
    trimmed = logprob_mismatch(flat_g, flat_l)
    assert trimmed.mult_prob_error == pytest.approx(padded.mult_prob_error, rel=1e-12)
    assert trimmed.abs_diff_max == padded.abs_diff_max
