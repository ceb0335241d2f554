"""Tests for bounded resolution (config/loading/expansion.py and the resolvers of resolve.py) and for values read
from outside the recipe (oc.env), which issues show as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rl_contracts.cli import main
from rl_contracts.config import ConfigIssue, load_recipe
from rl_contracts.config.loading.expansion import analyse
from rl_contracts.config.loading.limits import Limits
from rl_contracts.errors import RecipeError
from rl_contracts.testing.strategies import minimal_vllm_generation


def issues_of(path: Path, **kwargs: object) -> dict[str, ConfigIssue]:
    """The issues (by path) of a recipe that must fail."""
    with pytest.raises(RecipeError) as info:
        load_recipe(path, **kwargs)  # type: ignore[arg-type]
    return {issue.path: issue for issue in info.value.issues or ()}


def doubling(levels: int, refs: int = 10) -> str:
    """``levels`` strings, each naming the previous one ``refs`` times."""
    lines = ["p0: 'abcdefghij'"]
    lines += [f"p{i}: '" + f"${{.p{i - 1}}}" * refs + "'" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_doubling_interpolation_is_refused_at_the_default_limits(tmp_path: Path) -> None:
    """Ten levels of ``'${.prev}' * 10`` (10**11 characters once resolved) are V6 at the values beyond the limit,
    quickly, naming the path and the limit; the levels within it still resolve."""
    path = tmp_path / "r.yaml"
    path.write_text(doubling(10), encoding="utf-8")
    issues = {k: v for k, v in issues_of(path, limits=Limits(references=2_000)).items() if v.code == "V6"}
    assert set(issues) == {f"p{i}" for i in range(4, 11)}
    assert "Limits.references" in issues["p10"].reason
    assert issues["p10"].value.startswith("'${.p9}")


def test_doubling_mappings_are_refused(tmp_path: Path) -> None:
    """A mapping naming the previous mapping twice per level is refused once its expansion passes the limit."""
    lines = ["l0: {x: 1, y: 2}"] + [f"l{i}: {{a: '${{l{i - 1}}}', b: '${{l{i - 1}}}'}}" for i in range(1, 40)]
    path = tmp_path / "r.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    issues = {k: v for k, v in issues_of(path, limits=Limits(references=200)).items() if v.code == "V6"}
    assert "l39" in issues or "l39.a" in issues
    assert "l1" not in issues


def test_a_long_reference_chain_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    """A chain of references longer than ``4 * Limits.depth`` is V6, never a RecursionError."""
    path = tmp_path / "r.yaml"
    path.write_text("a0: 1\n" + "".join(f"a{i}: ${{a{i - 1}}}\n" for i in range(1, 40)), encoding="utf-8")
    issues = {k: v for k, v in issues_of(path, limits=Limits(depth=4)).items() if v.code == "V6"}
    assert set(issues) == {f"a{i}" for i in range(16, 40)}
    assert "16 levels" in issues["a16"].reason


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("${mul:ab,500000000}", "1,000,000,000 characters"),
        ("${mul:500000000,ab}", "1,000,000,000 characters"),
        ("${mul:" + "9" * 200 + "," + "9" * 200 + "}", "bits (limit 256 bits"),
        ("${add:" + "9" * 100 + "," + "9" * 100 + "}", "bits (limit 256 bits"),
    ],
)
def test_resolver_results_are_bounded(tmp_path: Path, expression: str, fragment: str) -> None:
    """``mul``/``add`` results beyond ``Limits.resolver_chars``/``resolver_bits`` are V6, refused before computed."""
    path = tmp_path / "r.yaml"
    path.write_text(f"a: '{expression}'\n", encoding="utf-8")
    issue = issues_of(path)["a"]
    assert issue.code == "V6"
    assert fragment in issue.reason


def test_resolver_results_are_bounded_in_all(tmp_path: Path) -> None:
    """Many resolver calls each within the limit are refused once their results add up past it."""
    path = tmp_path / "r.yaml"
    path.write_text("".join(f"k{i}: ${{mul:ab,30}}\n" for i in range(10)), encoding="utf-8")
    issues = issues_of(path, limits=Limits(resolver_chars=250))
    assert "in all" in issues["k9"].reason
    assert "k0" not in issues
    assert len(issues) >= 6


def test_honest_interpolations_are_not_refused(tmp_path: Path) -> None:
    """References, relative references and resolvers within the limits resolve as before."""
    generation = minimal_vllm_generation()
    generation["max_new_tokens"] = "${mul:${..seq},2}"
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps({"policy": {"seq": 64, "generation": generation}}), encoding="utf-8")
    recipe = load_recipe(path, run_preflight=False)
    assert recipe.generation is not None
    assert recipe.generation.max_new_tokens == 128


def test_analysis_is_linear_in_the_references() -> None:
    """A 60-level doubling document is analysed without expanding it: its top value is refused."""
    document = {"p0": "x", **{f"p{i}": f"${{p{i - 1}}}${{p{i - 1}}}" for i in range(1, 61)}}
    analysis = analyse(document, Limits())
    assert ("p60",) in analysis.refused
    assert ("p5",) not in analysis.refused


def env_recipe(tmp_path: Path) -> Path:
    """A recipe whose generation section reads a token from the environment into two rejected values."""
    generation = minimal_vllm_generation()
    generation["max_new_tokens"] = "${oc.env:RL_CONTRACTS_TEST_TOKEN}"
    generation["vllm_cfg"] = {**generation["vllm_cfg"], "tensor_parallel_size": "${..copied}"}
    generation["copied"] = "${oc.env:RL_CONTRACTS_TEST_TOKEN}"
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps({"policy": {"generation": generation}}), encoding="utf-8")
    return path


SECRET = "ghp_SECRETtoken123456"


def test_environment_values_are_shown_as_their_expression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rejected value read through ``oc.env`` (or through a reference to one) is shown as written; rules still
    see the resolved value (it is rejected)."""
    monkeypatch.setenv("RL_CONTRACTS_TEST_TOKEN", SECRET)
    issues = issues_of(env_recipe(tmp_path))
    shown = issues["policy.generation.max_new_tokens"]
    assert shown.value == "'${oc.env:RL_CONTRACTS_TEST_TOKEN}'"
    assert shown.json_value == "${oc.env:RL_CONTRACTS_TEST_TOKEN}"
    for issue in issues.values():
        assert SECRET not in issue.model_dump_json()


@pytest.mark.parametrize("form", ["human", "json", "github"])
def test_no_format_prints_an_environment_value(
    tmp_path: Path, form: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No output format prints the token: the run is invalid and shows the expression."""
    monkeypatch.setenv("RL_CONTRACTS_TEST_TOKEN", SECRET)
    assert main(["validate", "--format", form, str(env_recipe(tmp_path))]) == 1
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    assert "max_new_tokens" in out


def test_a_failed_lookup_keyed_by_the_environment_does_not_quote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``${policy.${oc.env:X}}`` fails with OmegaConf's "key not found: <X's value>"; the issue does not quote it."""
    monkeypatch.setenv("RL_CONTRACTS_TEST_TOKEN", SECRET)
    generation = minimal_vllm_generation()
    generation["top_k"] = "${policy.${oc.env:RL_CONTRACTS_TEST_TOKEN}}"
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps({"policy": {"generation": generation}}), encoding="utf-8")
    issue = issues_of(path)["policy.generation.top_k"]
    assert issue.code == "V2"
    assert SECRET not in issue.model_dump_json()
    assert issue.value == "'${policy.${oc.env:RL_CONTRACTS_TEST_TOKEN}}'"
