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
