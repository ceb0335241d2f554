"""Reports read as one line: ``str(report)`` is a summary an operator reads, not a repr of every field."""

from __future__ import annotations

import numpy as np

from rl_contracts.logprobs import logprob_mismatch


def test_mismatch_report_str_is_its_summary() -> None:
    """``str(MismatchReport)`` is ``summary()``: the counts, mult_prob_error and the worst token, in one line."""
    report = logprob_mismatch(
        np.array([[-0.5, -1.0, 0.0]]), np.array([[-0.5, -1.1, 0.0]]), np.array([[1, 1, 0]])
    )
    text = str(report)
    assert text == report.summary()
    assert "\n" not in text
    assert text.startswith("logprob agreement over 2 tokens in 1 sequence: mult_prob_error 1.05259")
    assert "at sequence 0, token 1 (vLLM -1, learner -1.1)" in text
    assert len(text) < len(repr(report)) / 2


def test_mismatch_report_summary_without_counted_tokens() -> None:
    """A report that counts no token says so instead of printing ``None`` figures."""
    report = logprob_mismatch(np.array([[-0.5]]), np.array([[-0.6]]), np.array([[0]]))
    assert report.summary() == "logprob agreement: no counted token (0 tokens in 0 sequences)"


def test_routing_agreement_str_is_its_summary() -> None:
    """``str(RoutingAgreement)`` names pairs, the set and in-order fractions and the first disagreement."""
    import torch

    from rl_contracts.routed_experts import routing_agreement

    engine = torch.tensor([[[0, 1], [2, 3]], [[0, 1], [2, 3]]])
    learner = torch.tensor([[[1, 0], [2, 3]], [[0, 1], [2, 4]]])
    agreement = routing_agreement(engine, learner)
    text = str(agreement)
    assert text == agreement.summary()
    assert "\n" not in text
    assert text.startswith(
        "routing agreement over 4 pairs (0 sentinel pairs left out): 0.75 as sets, 0.5 in order"
    )
    assert text.endswith("first disagreement at (b, t, layer) (0, 1, 1)")


def test_preflight_report_str_counts_errors_warnings_and_skips() -> None:
    """``str(PreflightReport)`` counts, with singular and plural forms; out of scope says no rule ran."""
    from rl_contracts.config.finding import Finding
    from rl_contracts.config.rules.preflight.report import PreflightReport

    error = Finding(code="P9", path="a", value=1, message="m", severity="error")
    warning = Finding(code="W1", path="b", value=2, message="m", severity="warning")
    skipped = Finding(code="N1", path="", value=None, message="m", severity="skipped")
    report = PreflightReport(True, "grpo", (error, warning, warning), (skipped,))
    assert str(report) == "preflight (grpo): 1 error, 2 warnings, 1 rule skipped"
    assert str(PreflightReport(False, None, (), ())) == "preflight: not a GRPO recipe, no rule ran"
