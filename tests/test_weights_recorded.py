"""Weight versions (SPEC §4.3) on outputs recorded from real vLLM 0.32, without vLLM installed.

``tests/data/generate_weight_versions.json`` was written by the real-vLLM tier (``tests/vllm/test_weights.py`` with
``RL_CONTRACTS_VLLM_RECORD``): a generate after ``set_weight_version("7")`` (one span per output) and a request
stepped across ``set_weight_version("8")`` (two spans). Expectations are computed here from the raw JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rl_contracts.errors import WeightVersionError
from rl_contracts.testing import assert_contract_error
from rl_contracts.weights import (
    WeightVersionSpan,
    check_weight_versions,
    weight_version_per_token,
    weight_version_spans,
)

DATA = json.loads((Path(__file__).parent / "data" / "generate_weight_versions.json").read_text())


@dataclass
class VllmWeightVersionSpan:
    """The shape of vLLM 0.32's ``vllm.outputs.WeightVersionSpan`` dataclass."""

    version: str
    start: int
    end: int


def recorded_outputs() -> list[tuple[str, dict[str, Any]]]:
    """Every recorded completion output, with the scenario it came from."""
    return [
        (scenario, output)
        for scenario in ("generate", "stepped")
        for request in DATA[scenario]["request_outputs"]
        for output in request["outputs"]
    ]


OUTPUTS = recorded_outputs()
IDS = [f"{scenario}-{i}" for i, (scenario, _) in enumerate(OUTPUTS)]


def completion(output: dict[str, Any], spans: list[Any] | None = None) -> SimpleNamespace:
    """A completion output as vLLM hands it over, its spans in the recorded JSON form unless ``spans`` is given."""
    return SimpleNamespace(
        index=output["index"],
        token_ids=output["token_ids"],
        weight_versions=output["weight_versions"] if spans is None else spans,
    )


def test_recording_holds_both_scenarios() -> None:
    """The file is 0.32's: four one-span outputs labelled "7" and one output split 7 | 8 after four steps."""
    assert DATA["meta"]["vllm_version"] == "0.32.0"
    assert [len(o["weight_versions"]) for scenario, o in OUTPUTS if scenario == "generate"] == [1, 1, 1, 1]
    [(_, stepped)] = [item for item in OUTPUTS if item[0] == "stepped"]
    assert [span["version"] for span in stepped["weight_versions"]] == ["7", "8"]
    assert stepped["weight_versions"][0] == {"version": "7", "start": 0, "end": 4}


@pytest.mark.parametrize(("scenario", "output"), OUTPUTS, ids=IDS)
def test_recorded_spans_read_in_every_accepted_form(scenario: str, output: dict[str, Any]) -> None:
    """JSON mappings, vLLM's dataclass and 3-tuples of the same spans all read as the same WeightVersionSpans."""
    del scenario
    raw = output["weight_versions"]
    expected = tuple(WeightVersionSpan(**span) for span in raw)
    forms: list[list[Any]] = [
        raw,
        [VllmWeightVersionSpan(**span) for span in raw],
        [(span["version"], span["start"], span["end"]) for span in raw],
    ]
    for spans in forms:
        assert weight_version_spans(completion(output, spans), required=True) == expected


@pytest.mark.parametrize(("scenario", "output"), OUTPUTS, ids=IDS)
def test_recorded_tokens_map_to_their_version(scenario: str, output: dict[str, Any]) -> None:
    """Every output token maps to the index of the label of the span that covers it."""
    del scenario
    labels = ["unused", *sorted({span["version"] for span in output["weight_versions"]}, reverse=True)]
    expected = [
        labels.index(span["version"])
        for span in output["weight_versions"]
        for _ in range(span["start"], span["end"])
    ]
    assert len(expected) == len(output["token_ids"])
    spans = weight_version_spans(completion(output), required=True)
    assert spans is not None
    assert weight_version_per_token(spans, labels=labels).tolist() == expected


@pytest.mark.parametrize(("scenario", "output"), OUTPUTS, ids=IDS)
def test_recorded_outputs_are_rejected_for_each_disallowed_label(
    scenario: str, output: dict[str, Any]
) -> None:
    """Allowing every recorded label passes; leaving one out rejects the first span that carries it."""
    del scenario
    raw = output["weight_versions"]
    present = {span["version"] for span in raw}
    assert check_weight_versions(completion(output), allowed=present) is not None
    for left_out in present:
        first = next(i for i, span in enumerate(raw) if span["version"] == left_out)
        with pytest.raises(WeightVersionError) as info:
            check_weight_versions(completion(output), allowed=present - {left_out})
        assert (info.value.span_index, info.value.version) == (first, left_out)
        assert (
            f"output tokens [{raw[first]['start']}, {raw[first]['end']}) of completion output {output['index']} "
            f"were sampled by weights '{left_out}'" in str(info.value)
        )
        assert_contract_error(info.value)


def test_stepped_recording_tampered_is_rejected_at_the_bad_span() -> None:
    """The real two-span output with a gap, a dropped tail or a repeated label is rejected naming that span."""
    [(_, stepped)] = [item for item in OUTPUTS if item[0] == "stepped"]
    first, second = stepped["weight_versions"]
    n = len(stepped["token_ids"])
    tampered = [
        ([first, {**second, "start": second["start"] + 1}], 1),
        ([first], 0),
        ([first, {**second, "version": first["version"]}], 1),
    ]
    for spans, bad in tampered:
        with pytest.raises(WeightVersionError) as info:
            weight_version_spans(completion(stepped, spans))
        assert info.value.span_index == bad
        assert info.value.token_count == n
        assert_contract_error(info.value)
