"""The ``metrics`` sub-command: watch a running vLLM server's engine and spec-decode metrics (SPEC §6.8).

``rl-contracts metrics URL [--interval S] [--count N] [--json] [--timeout S]`` scrapes ``URL`` (a vLLM server's
Prometheus page, e.g. ``http://127.0.0.1:8000/metrics``) once, then every ``S`` seconds (default 5), ``N`` times
(default: until Ctrl-C).  For each interval it prints the engine step metrics (SPEC §6.6) and the spec-decode
metrics (§6.7) between consecutive snapshots: a table, or one JSON object per line with ``--json``.  Each
snapshot names its engine by the URL and its series' labels, so deltas are taken per engine: a server that
restarted between two scrapes (a counter went backwards, or its labels changed) is counted in
``vllm/engines_reset`` and its series are left out of that interval, never reported as a plausible small step.

Exit status: 0 after ``N`` intervals or Ctrl-C; 2, with one line on stderr, when the server is unreachable,
answers with an HTTP status other than 200, times out (default 10 s), or serves a page that is not Prometheus text
or holds no ``vllm:`` family.  Only the given URL is contacted: proxies from the environment are not used,
redirects are refused, and no retry hides a failure.

Building the parser imports nothing beyond the standard library: prometheus_client (through
:mod:`rl_contracts.metrics`) and rich are imported when the command runs (SPEC §0.2).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from .._internal.messages import shorten
from ..errors import ContractError
from . import startup

if TYPE_CHECKING:
    from ..metrics import AggregatedCounters

__all__ = ["MAX_PAGE_BYTES", "register", "run"]

MAX_PAGE_BYTES = 64 * 1024 * 1024
"""A larger page is refused without reading the rest (a vLLM page is about 50 KB)."""


class _ScrapeError(Exception):
    """A failed scrape; the message is the one line printed on stderr."""


def _float_arg(minimum: float, inclusive: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
        if not math.isfinite(value) or value < minimum or (value == minimum and not inclusive):
            bound = f">= {minimum:g}" if inclusive else f"> {minimum:g}"
            raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text!r}")
        return value

    return parse


def _count_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 interval, got {text!r}")
    return value


def _seconds_option(
    parser: argparse.ArgumentParser, flag: str, default: float, *, zero_ok: bool, help_text: str
) -> None:
    """Add a finite ``S`` seconds option, ``>= 0`` when ``zero_ok`` else ``> 0``; its help ends with the default."""
    parser.add_argument(
        flag,
        type=_float_arg(0.0, inclusive=zero_ok),
        default=default,
        metavar="S",
        help=f"{help_text} (default: {default:g})",
    )


def register(commands: Any) -> None:
    """Add the ``metrics`` sub-command to ``commands`` (an argparse sub-parsers action); its default ``run`` is
    :func:`run`."""
    parser = commands.add_parser(
        "metrics",
        help="print per-interval engine and spec-decode metrics of a running vLLM server",
        description=(
            "Scrape a vLLM server's Prometheus page every S seconds and print, for each interval, the engine step "
            "metrics (tokens, mean lengths, ok/failed generations) and the spec-decode metrics (acceptance length "
            "and rate, per position). Exit status 2 when the page cannot be fetched or is not a vLLM metrics page."
        ),
    )
    parser.add_argument(
        "url", metavar="URL", help="the server's metrics page, e.g. http://127.0.0.1:8000/metrics"
    )
    _seconds_option(parser, "--interval", 5.0, zero_ok=True, help_text="seconds between scrapes")
    parser.add_argument(
        "--count",
        type=_count_arg,
        metavar="N",
        help="number of intervals to print after the first scrape (default: until interrupted)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object per interval and line")
    _seconds_option(
        parser, "--timeout", 10.0, zero_ok=False, help_text="seconds to wait for the server on each scrape"
    )
    parser.set_defaults(run=run)


def run(
    args: argparse.Namespace,
    *,
    sleep: Callable[[float], object] = time.sleep,
    clock: Callable[[], float] = time.time,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run ``rl-contracts metrics`` with parsed ``args``; return the exit status (0, or 2 on a failed scrape).

    ``sleep`` (called with ``args.interval`` between scrapes), ``clock`` (epoch seconds of each scrape) and the
    streams are injectable so tests do not wait.  A ``KeyboardInterrupt`` ends the run with status 0.
    """
    from ..metrics import compute_engine_step_metrics, compute_spec_decode_metrics

    startup.imports_done()  # scrapes arrive for as long as the run lasts: their garbage is collected
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stderr is None else stderr
    url: str = args.url
    try:
        _check_url(url)
        started = clock()
        previous = _scrape(url, args.timeout)
        index = 0
        while args.count is None or index < args.count:
            sleep(args.interval)
            ended = clock()
            current = _scrape(url, args.timeout)
            index += 1
            interval = _Interval(
                index,
                started,
                ended,
                compute_engine_step_metrics(previous, current),
                compute_spec_decode_metrics(previous, current),
            )
            if args.json:
                _print_json(out, interval)
            else:
                _print_table(out, url, interval)
            previous, started = current, ended
    except KeyboardInterrupt:
        return 0
    except (_ScrapeError, ContractError) as error:
        message = " ".join(str(error).split())
        print(shorten(f"rl-contracts metrics: error: {message}", 2000), file=err)
        return 2
    return 0


def _check_url(url: str) -> None:
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _ScrapeError(
            f"URL must be an http:// or https:// address such as http://127.0.0.1:8000/metrics, got {url!r}"
        )


def _refuse_redirects() -> Any:
    """A redirect handler that turns every redirect into an ``HTTPError``, so only the given URL is contacted
    (a factory: urllib.request takes about 30 ms to import, which ``--help`` should not pay)."""
    import urllib.request

    class RefuseRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return RefuseRedirects()


def _fetch(url: str, timeout: float) -> bytes:
    import http.client
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _refuse_redirects())
    request = urllib.request.Request(url, headers={"Accept": "text/plain"})
    try:
        with opener.open(request, timeout=timeout) as response:
            if response.status != 200:
                raise _ScrapeError(f"{url} answered HTTP {response.status}, expected 200")
            body: bytes = response.read(MAX_PAGE_BYTES + 1)
    except urllib.error.HTTPError as error:
        error.close()
        raise _ScrapeError(f"{url} answered HTTP {error.code} {error.reason}, expected 200") from None
    except urllib.error.URLError as error:
        if isinstance(error.reason, TimeoutError):
            raise _ScrapeError(f"{url} did not answer within {timeout:g} s (--timeout)") from None
        raise _ScrapeError(f"cannot reach {url}: {error.reason}; is the vLLM server running?") from None
    except TimeoutError:
        raise _ScrapeError(f"{url} did not answer within {timeout:g} s (--timeout)") from None
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise _ScrapeError(f"cannot read {url}: {type(error).__name__}: {error}") from None
    if len(body) > MAX_PAGE_BYTES:
        raise _ScrapeError(f"{url} served more than {MAX_PAGE_BYTES} bytes; not a vLLM metrics page")
    return body


def _scrape(url: str, timeout: float) -> AggregatedCounters:
    """Fetch and parse one snapshot, aggregated as the trainer does (1-based per-position keys)."""
    from ..metrics import aggregate_spec_decode_counters, parse_prometheus_text

    body = _fetch(url, timeout)
    try:
        text = body.decode()  # strict UTF-8, the default
    except UnicodeDecodeError:
        raise _ScrapeError(f"{url} did not serve Prometheus text (not UTF-8)") from None
    try:
        page = parse_prometheus_text(text, process=url)  # the server is the engine; a restart is a reset
    except ContractError as error:
        raise _ScrapeError(f"{url} did not serve a usable Prometheus page: {error}") from None
    if not page.vllm_families:
        raise _ScrapeError(f"{url} holds no vllm: metric family; is it a vLLM server's /metrics page?")
    return aggregate_spec_decode_counters([page.snapshot])


def _timestamp(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(timespec="seconds")


def _json_number(value: float) -> float | None:
    return value if math.isfinite(value) else None


class _Interval(NamedTuple):
    """One printed interval: its 1-based number, its start and end (epoch seconds) and its metrics."""

    number: int
    started: float
    ended: float
    engine: Mapping[str, float]
    spec: Mapping[str, float]


def _print_json(out: IO[str], interval: _Interval) -> None:
    record = {
        "interval": interval.number,
        "start": interval.started,
        "end": interval.ended,
        "engine": {key: _json_number(value) for key, value in interval.engine.items()},
        "spec_decode": {key: _json_number(value) for key, value in interval.spec.items()},
    }
    print(json.dumps(record, allow_nan=False), file=out, flush=True)


def _format_value(value: float) -> str:
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4f}"


def _print_table(out: IO[str], url: str, interval: _Interval) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Only Text renderables are printed, so markup, emoji and highlighting never apply.
    console = Console(file=out, color_system="auto" if out.isatty() else None)
    index, started, ended, engine, spec = interval
    header = (
        f"interval {index}: {_timestamp(started)} to {_timestamp(ended)} ({ended - started:.1f} s)  {url}"
    )
    console.print(Text(header), soft_wrap=True)
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    if not engine:
        table.add_row(Text("engine: no kept series reported"), Text("-"))
    for key, value in engine.items():
        table.add_row(Text(key), Text(_format_value(value)))
    table.add_section()
    for key, value in spec.items():
        table.add_row(Text(key), Text(_format_value(value)))
    console.print(table)
    out.flush()
