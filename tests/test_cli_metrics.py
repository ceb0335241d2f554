"""Tests of ``rl-contracts metrics`` (SPEC §6.8) against a small local HTTP server serving recorded pages."""

from __future__ import annotations

import http.server
import io
import itertools
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rl_contracts.cli import build_parser, main
from rl_contracts.cli import metrics as metrics_cli

DATA = Path(__file__).parent / "data"
AFTER_PAGE = (DATA / "server_metrics_after_two_chats.prom").read_bytes()
RECORDED_SAMPLE_PAGE = (DATA / "vllm_server_metrics_sample.prom").read_bytes()
SAMPLE_PAGE = RECORDED_SAMPLE_PAGE.replace(b'model_name="tiny"', b'model_name="tiny-moe"')
"""The sample page as the same engine as ``AFTER_PAGE`` (it was recorded from a server naming the model "tiny"),
so that the two pages are one engine's counters before and after two chats."""
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"


def spec_page(drafts: int, tokens: int, accepted: int, per_position: list[int]) -> bytes:
    """A minimal vLLM page with spec-decode counters on one engine."""
    lines = []
    for name, value in (
        ("vllm:spec_decode_num_drafts", drafts),
        ("vllm:spec_decode_num_draft_tokens", tokens),
        ("vllm:spec_decode_num_accepted_tokens", accepted),
    ):
        lines += [f"# TYPE {name}_total counter", f'{name}_total{{engine="0"}} {value}']
    lines.append(f"# TYPE {PER_POS}_total counter")
    lines += [f'{PER_POS}_total{{engine="0",position="{i}"}} {v}' for i, v in enumerate(per_position)]
    return ("\n".join(lines) + "\n").encode()


Response = tuple[int, bytes, dict[str, str]]
STALL = 0
"""A response status that makes the server accept the request and never answer."""


@dataclass
class PageServer:
    """A loopback HTTP server that answers each path with its queued responses in turn (the last one repeats)."""

    base: str
    routes: dict[str, list[Response]] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)
    requests: list[str] = field(default_factory=list)
    accept: list[str | None] = field(default_factory=list)

    def serve(self, path: str, *responses: bytes | Response) -> str:
        self.routes[path] = [(200, r, {}) if isinstance(r, bytes) else r for r in responses]
        return self.base + path


@pytest.fixture
def server() -> Iterator[PageServer]:
    """Start a PageServer on 127.0.0.1 with an ephemeral port in a thread; shut it down afterwards."""
    state = PageServer(base="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            state.accept.append(self.headers.get("Accept"))
            queue = state.routes.get(self.path, [(404, b"not found", {})])
            status, body, headers = queue.pop(0) if len(queue) > 1 else queue[0]
            if self.path == "/slow" or status == STALL:
                state.release.wait(5)
                return
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            if int(headers.get("Content-Length", len(body))) > len(body):
                state.release.wait(5)  # a body that stalls part-way

        def log_message(self, format: str, *args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            pass

    httpd = Server(("127.0.0.1", 0), Handler)
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@dataclass
class Result:
    status: int
    out: str
    err: str
    sleeps: list[float]


def run_cli(*argv: str, sleep_raises: BaseException | None = None) -> Result:
    """Run the sub-command with a recording sleep, a fake clock (100, 105, ...) and captured streams."""
    args = build_parser().parse_args(["metrics", *argv])
    sleeps: list[float] = []
    clock = itertools.count(100.0, 5.0)

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if sleep_raises is not None:
            raise sleep_raises

    out, err = io.StringIO(), io.StringIO()
    status = metrics_cli.run(args, sleep=sleep, clock=lambda: next(clock), stdout=out, stderr=err)
    return Result(status, out.getvalue(), err.getvalue(), sleeps)


def assert_one_line_error(result: Result, *fragments: str) -> None:
    """Exit status 2 and exactly one stderr line containing every fragment."""
    assert result.status == 2
    assert result.err.count("\n") == 1
    assert result.err.startswith("rl-contracts metrics: error: ")
    for fragment in fragments:
        assert fragment in result.err, (fragment, result.err)


def test_table_shows_the_delta_between_two_recorded_pages(server: PageServer) -> None:
    """Two real pages in sequence give the step's token counts, exact mean lengths and outcomes, uncoloured."""
    url = server.serve("/metrics", SAMPLE_PAGE, AFTER_PAGE)
    result = run_cli(url, "--count", "1", "--interval", "2.5")
    assert result.status == 0
    assert result.err == ""
    assert result.sleeps == [2.5]
    assert "\x1b[" not in result.out
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in result.out.splitlines()
        if line.count("│") == 3
    }
    assert "┃ metric" in result.out
    assert rows == {
        "vllm/prompt_tokens": "25",
        "vllm/generation_tokens": "10",
        "vllm/prompt_length_mean": "12.5000",
        "vllm/generation_length_mean": "5",
        "vllm/generations_ok": "2",
        "vllm/generations_failed": "0",
        "vllm/spec_num_drafts": "0",
        "vllm/spec_num_draft_tokens": "0",
        "vllm/spec_num_accepted_tokens": "0",
        "vllm/spec_acceptance_length": "1",
        "vllm/spec_acceptance_rate": "0",
    }
    header = f"interval 1: 1970-01-01T00:01:40+00:00 to 1970-01-01T00:01:45+00:00 (5.0 s)  {url}"
    assert result.out.splitlines()[0] == header  # one line even beyond 80 columns
    assert "┃   value ┃" in result.out
    assert "│      25 │" in result.out  # values are right-justified


def test_json_lines_parse_back_with_index_and_timestamps(server: PageServer) -> None:
    """--json prints one object per interval with its index, start/end timestamps and both metric groups."""
    url = server.serve("/metrics", SAMPLE_PAGE, AFTER_PAGE, AFTER_PAGE)
    result = run_cli(url, "--count", "2", "--json", "--interval", "0")
    assert result.status == 0
    records = [json.loads(line) for line in result.out.splitlines()]
    assert [(r["interval"], r["start"], r["end"]) for r in records] == [(1, 100.0, 105.0), (2, 105.0, 110.0)]
    assert records[0]["engine"] == {
        "vllm/prompt_tokens": 25.0,
        "vllm/generation_tokens": 10.0,
        "vllm/prompt_length_mean": 12.5,
        "vllm/generation_length_mean": 5.0,
        "vllm/generations_ok": 2.0,
        "vllm/generations_failed": 0.0,
    }
    assert records[1]["engine"]["vllm/prompt_tokens"] == 0.0
    assert "vllm/prompt_length_mean" not in records[1]["engine"]
    assert records[1]["spec_decode"]["vllm/spec_acceptance_length"] == 1.0
    assert server.requests == ["/metrics"] * 3


def test_spec_decode_acceptance_is_reported_per_position(server: PageServer) -> None:
    """Spec-decode counters give acceptance length, rate and 1-based per-position counts and rates."""
    url = server.serve(
        "/metrics", spec_page(100, 300, 200, [75, 70, 55]), spec_page(200, 600, 440, [165, 150, 125])
    )
    result = run_cli(url, "--count", "1", "--json")
    spec = json.loads(result.out)["spec_decode"]
    assert spec["vllm/spec_num_drafts"] == 100.0
    assert spec["vllm/spec_acceptance_length"] == pytest.approx(3.4)
    assert spec["vllm/spec_acceptance_rate"] == pytest.approx(0.8)
    assert spec[f"vllm/{PER_POS}-1"] == 90.0
    assert spec[f"vllm/{PER_POS}-3"] == 70.0
    assert spec["vllm/spec_acceptance_rate-pos-2"] == pytest.approx(0.8)
    assert json.loads(result.out)["engine"] == {}


def _openmetrics_page(prompt_tokens: int, *, eof: bool) -> bytes:
    """A page that declares its counter by the OpenMetrics family name, optionally as OpenMetrics (``# EOF``)."""
    page = (
        "# TYPE vllm:prompt_tokens counter\n"
        f'vllm:prompt_tokens_total{{engine="0"}} {prompt_tokens}\n'
        'vllm:prompt_tokens_created{engine="0"} 1.7e9\n'
    )
    return (page + ("# EOF\n" if eof else "")).encode()


@pytest.mark.parametrize("eof", [False, True])
def test_openmetrics_spelled_pages_are_read(server: PageServer, eof: bool) -> None:
    """Counters declared by their OpenMetrics name, in a text page or an OpenMetrics one, give their delta (SPEC
    §6.3: a kept counter is never dropped)."""
    url = server.serve("/metrics", _openmetrics_page(10, eof=eof), _openmetrics_page(35, eof=eof))
    result = run_cli(url, "--count", "1", "--json")
    assert (result.status, result.err) == (0, "")
    assert json.loads(result.out)["engine"] == {"vllm/prompt_tokens": 25.0}


def test_a_restarted_server_is_reported_as_a_reset_not_a_small_step(server: PageServer) -> None:
    """Counters that went backwards between two scrapes, or labels that changed (the server came back with another
    model name), give vllm/engines_reset and no token counts for that interval; the next interval counts again."""
    url = server.serve("/metrics", AFTER_PAGE, SAMPLE_PAGE, RECORDED_SAMPLE_PAGE, RECORDED_SAMPLE_PAGE)
    result = run_cli(url, "--count", "3", "--json", "--interval", "0")
    assert (result.status, result.err) == (0, "")
    went_back, relabelled, steady = (json.loads(line) for line in result.out.splitlines())
    for record in (went_back, relabelled):
        assert record["engine"] == {"vllm/engines_reset": 1.0}
        assert record["spec_decode"]["vllm/engines_reset"] == 1.0
        assert record["spec_decode"]["vllm/spec_num_drafts"] == 0.0
    assert steady["engine"]["vllm/prompt_tokens"] == 0.0
    assert "vllm/engines_reset" not in steady["engine"]


def test_main_runs_the_registered_sub_command(server: PageServer, capsys: pytest.CaptureFixture[str]) -> None:
    """The console entry point dispatches 'metrics' with real sleep (0 s) and stdout."""
    url = server.serve("/metrics", SAMPLE_PAGE, AFTER_PAGE)
    assert main(["metrics", url, "--count", "1", "--interval", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["engine"]["vllm/prompt_tokens"] == 25.0


def test_ctrl_c_exits_zero(server: PageServer) -> None:
    """A KeyboardInterrupt while waiting ends the run cleanly with status 0."""
    url = server.serve("/metrics", SAMPLE_PAGE)
    result = run_cli(url, sleep_raises=KeyboardInterrupt())
    assert (result.status, result.out, result.err) == (0, "", "")


def test_runs_until_interrupted_without_count(server: PageServer) -> None:
    """Without --count it keeps scraping until interrupted."""
    url = server.serve("/metrics", SAMPLE_PAGE)
    args = build_parser().parse_args(["metrics", url, "--json"])
    calls: list[float] = []

    def sleep(seconds: float) -> None:
        calls.append(seconds)
        if len(calls) == 4:
            raise KeyboardInterrupt

    out = io.StringIO()
    assert metrics_cli.run(args, sleep=sleep, stdout=out, stderr=io.StringIO()) == 0
    assert calls == [5.0] * 4
    assert len(out.getvalue().splitlines()) == 3


def test_http_404_is_an_error(server: PageServer) -> None:
    """A status other than 200 is a one-line error with exit status 2."""
    assert_one_line_error(run_cli(server.base + "/missing"), "answered HTTP 404")


def test_non_200_success_status_is_an_error(server: PageServer) -> None:
    """A 2xx status other than 200 is also refused."""
    url = server.serve("/metrics", (203, SAMPLE_PAGE, {}))
    assert_one_line_error(run_cli(url), "answered HTTP 203, expected 200")


def test_redirects_are_refused(server: PageServer) -> None:
    """A redirect is reported, never followed, so only the given URL is contacted."""
    server.serve("/target", SAMPLE_PAGE)
    url = server.serve("/metrics", (302, b"", {"Location": server.base + "/target"}))
    assert_one_line_error(run_cli(url), "answered HTTP 302")
    assert server.requests == ["/metrics"]


def test_later_failure_is_reported_after_printed_intervals(server: PageServer) -> None:
    """A scrape failing after earlier intervals still exits 2; no retry hides it."""
    url = server.serve("/metrics", SAMPLE_PAGE, AFTER_PAGE, (500, b"boom", {}))
    result = run_cli(url, "--json", "--count", "5")
    assert len(result.out.splitlines()) == 1
    assert_one_line_error(result, "answered HTTP 500")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"<html><body>Welcome</body></html>\n", "could not parse Prometheus text"),
        (b'{"status": "ok"}', "could not parse Prometheus text"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (
            b"# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total -4\n",
            "must be finite and >= 0",
        ),
    ],
)
def test_garbage_pages_are_errors(server: PageServer, body: bytes, fragment: str) -> None:
    """A page that is not (valid) Prometheus text is a one-line error with exit status 2."""
    url = server.serve("/metrics", body)
    assert_one_line_error(run_cli(url), fragment)


@pytest.mark.parametrize(
    "body",
    [b"# TYPE process_open_fds gauge\nprocess_open_fds 3\n", b"", b"# just a comment\n"],
)
def test_pages_without_vllm_families_are_errors(server: PageServer, body: bytes) -> None:
    """Prometheus text without any vllm: family is not a vLLM server's page."""
    url = server.serve("/metrics", body)
    assert_one_line_error(run_cli(url), "no vllm: metric family")


def test_unreachable_server_is_an_error() -> None:
    """A closed loopback port is a one-line 'cannot reach' error with exit status 2."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert_one_line_error(run_cli(f"http://127.0.0.1:{port}/metrics"), "cannot reach")


def test_timeout_is_an_error(server: PageServer) -> None:
    """A server slower than --timeout is a one-line error naming the timeout."""
    assert_one_line_error(run_cli(server.base + "/slow", "--timeout", "0.2"), "did not answer within 0.2 s")


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "127.0.0.1:8000/metrics", "ftp://127.0.0.1/x", "http://"]
)
def test_non_http_urls_are_errors(url: str) -> None:
    """Only http(s) URLs with a host are contacted."""
    assert_one_line_error(run_cli(url), "http:// or https://")


@pytest.mark.parametrize(
    "argv",
    [
        ["--count", "0"],
        ["--count", "x"],
        ["--interval", "-1"],
        ["--interval", "nan"],
        ["--timeout", "0"],
        ["--timeout", "inf"],
        [],
    ],
)
def test_bad_options_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Invalid option values (or a missing URL) exit with argparse's status 2."""
    url = [] if not argv else ["http://127.0.0.1:9/metrics"]
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["metrics", *url, *argv])
    assert info.value.code == 2
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["--count", "x"], ["--count", "whole number", "'x'"]),
        (["--count", "0"], ["--count", "at least 1", "'0'"]),
        (["--interval", "soon"], ["--interval", "seconds", "'soon'"]),
        (["--interval", "-1"], ["--interval", ">= 0", "'-1'"]),
        (["--timeout", "0"], ["--timeout", "> 0", "'0'"]),
        (["--timeout", "inf"], ["--timeout", "finite", "'inf'"]),
    ],
)
def test_bad_option_messages(
    argv: list[str], fragments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each invalid option value is rejected with a message naming the option, the expectation and the value."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["metrics", "http://127.0.0.1:9/metrics", *argv])
    last = capsys.readouterr().err.splitlines()[-1]
    assert "error: argument " in last
    for fragment in fragments:
        assert fragment in last


def test_defaults_match_the_spec() -> None:
    """Interval 5 s, no count (until interrupted), table output and a 10 s timeout by default."""
    args = build_parser().parse_args(["metrics", "http://127.0.0.1:8000/metrics"])
    assert (args.interval, args.count, args.json, args.timeout) == (5.0, None, False, 10.0)
    assert args.run is metrics_cli.run


def test_main_prints_the_table_to_stdout(server: PageServer, capsys: pytest.CaptureFixture[str]) -> None:
    """Without injected streams the table goes to sys.stdout and nothing to sys.stderr."""
    url = server.serve("/metrics", SAMPLE_PAGE, AFTER_PAGE)
    assert main(["metrics", url, "--count", "1", "--interval", "0"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("interval 1: ")
    assert "│ vllm/prompt_tokens" in captured.out
    assert captured.err == ""


def test_main_prints_errors_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """Without injected streams a failed scrape is one line on sys.stderr and nothing on sys.stdout."""
    assert main(["metrics", "ftp://127.0.0.1/metrics"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("rl-contracts metrics: error: URL must be an http:// or https:// address")


def test_error_line_is_at_most_2000_characters() -> None:
    """A huge offending URL is shortened so the stderr line has exactly 2000 characters, ending in '...'."""
    result = run_cli("ftp://" + "a" * 3000)
    assert_one_line_error(result, "URL must be")
    line = result.err.rstrip("\n")
    assert (len(line), line[-3:]) == (2000, "...")


def test_https_urls_are_accepted() -> None:
    """An https:// URL passes the URL check and fails only at the connection (closed port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run_cli(f"https://127.0.0.1:{port}/metrics")
    assert_one_line_error(result, "cannot reach")
    assert "URL must be" not in result.err


def test_invalid_port_is_a_read_error() -> None:
    """A URL the HTTP client rejects is reported with the exception type and its message."""
    result = run_cli("http://127.0.0.1:x/metrics")
    assert_one_line_error(result, "cannot read http://127.0.0.1:x/metrics", "InvalidURL", "port")


def test_environment_proxies_are_ignored(server: PageServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """An http_proxy in the environment is not used: the server is contacted directly."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for name in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    url = server.serve("/metrics", SAMPLE_PAGE, AFTER_PAGE)
    result = run_cli(url, "--count", "1", "--json")
    assert (result.status, result.err) == (0, "")


def test_requests_ask_for_plain_text(server: PageServer) -> None:
    """Every scrape sends 'Accept: text/plain'."""
    url = server.serve("/metrics", SAMPLE_PAGE, AFTER_PAGE)
    run_cli(url, "--count", "1", "--json")
    assert server.accept == ["text/plain", "text/plain"]


def test_second_scrape_uses_the_timeout(server: PageServer) -> None:
    """The --timeout applies to every scrape, not only the first."""
    url = server.serve("/metrics", SAMPLE_PAGE, (STALL, b"", {}))
    assert_one_line_error(
        run_cli(url, "--timeout", "0.2", "--count", "1"), "did not answer within 0.2 s (--timeout)"
    )


def test_body_that_stalls_is_a_timeout(server: PageServer) -> None:
    """A body that stops arriving part-way is a timeout error."""
    url = server.serve("/metrics", (200, SAMPLE_PAGE[:100], {"Content-Length": str(len(SAMPLE_PAGE))}))
    result = run_cli(url, "--timeout", "0.2", "--count", "1")
    assert_one_line_error(result, url, "did not answer", "0.2 s", "--timeout")


def test_page_size_limit(server: PageServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page of exactly the limit is accepted; one byte more is refused without reading the rest."""
    first, second = spec_page(1, 2, 1, [1]), spec_page(3, 6, 3, [3])
    monkeypatch.setattr(metrics_cli, "MAX_PAGE_BYTES", max(len(first), len(second)))
    url = server.serve("/ok", first, second)
    assert run_cli(url, "--count", "1", "--json").status == 0
    limit = len(SAMPLE_PAGE) - 1
    monkeypatch.setattr(metrics_cli, "MAX_PAGE_BYTES", limit)
    url = server.serve("/big", SAMPLE_PAGE)
    assert_one_line_error(run_cli(url, "--count", "1"), url, f"more than {limit} bytes")
    # A body announced as huge but still arriving is refused once the limit is exceeded, not read to the end.
    url = server.serve("/endless", (200, SAMPLE_PAGE, {"Content-Length": str(10 * len(SAMPLE_PAGE))}))
    assert_one_line_error(run_cli(url, "--timeout", "0.5", "--count", "1"), f"served more than {limit} bytes")


def test_non_finite_metrics_are_json_null(server: PageServer) -> None:
    """A metric that overflows to infinity is written as JSON null, never as Infinity."""
    tiny = (
        b"# TYPE vllm:spec_decode_num_drafts_total counter\n"
        b'vllm:spec_decode_num_drafts_total{engine="0"} 1e-300\n'
        b"# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
        b'vllm:spec_decode_num_draft_tokens_total{engine="0"} 1e-300\n'
        b"# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
        b'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 1e300\n'
    )
    url = server.serve("/metrics", spec_page(0, 0, 0, []), tiny)
    result = run_cli(url, "--count", "1", "--json")
    spec = json.loads(result.out)["spec_decode"]
    assert spec["vllm/spec_acceptance_length"] is None
    assert spec["vllm/spec_acceptance_rate"] is None
    assert spec["vllm/spec_num_accepted_tokens"] == 1e300


class FlushRecorder(io.StringIO):
    """A text stream that records how much had been written at each flush, optionally posing as a terminal."""

    def __init__(self, tty: bool = False) -> None:
        super().__init__()
        self.tty = tty
        self.flushed: list[int] = []

    def flush(self) -> None:
        self.flushed.append(len(self.getvalue()))

    def isatty(self) -> bool:
        return self.tty


def test_each_json_line_is_flushed(server: PageServer) -> None:
    """Every JSON line is flushed as soon as it is written, so a pipe sees each interval at once."""
    url = server.serve("/metrics", SAMPLE_PAGE, AFTER_PAGE, AFTER_PAGE)
    args = build_parser().parse_args(["metrics", url, "--json", "--count", "2", "--interval", "0"])
    out = FlushRecorder()
    assert metrics_cli.run(args, sleep=lambda _: None, stdout=out, stderr=io.StringIO()) == 0
    ends = [i + 1 for i, char in enumerate(out.getvalue()) if char == "\n"]
    assert sorted(set(out.flushed)) == ends


@pytest.mark.parametrize(("tty", "force_color"), [(True, False), (False, True)])
def test_table_is_coloured_only_on_a_terminal(
    server: PageServer, monkeypatch: pytest.MonkeyPatch, tty: bool, force_color: bool
) -> None:
    """The table uses colour on a terminal and never on a pipe, even when FORCE_COLOR is set."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    if force_color:
        monkeypatch.setenv("FORCE_COLOR", "1")
    else:
        monkeypatch.delenv("FORCE_COLOR", raising=False)
    url = server.serve("/metrics", SAMPLE_PAGE, AFTER_PAGE)
    args = build_parser().parse_args(["metrics", url, "--count", "1", "--interval", "0"])
    out = FlushRecorder(tty=tty)
    assert metrics_cli.run(args, sleep=lambda _: None, stdout=out, stderr=io.StringIO()) == 0
    assert ("\x1b[" in out.getvalue()) is tty


def test_table_without_engine_series(server: PageServer) -> None:
    """When no engine series is kept the table says so in one row with '-' as its value."""
    url = server.serve("/metrics", spec_page(1, 2, 1, [1]), spec_page(3, 6, 3, [3]))
    result = run_cli(url, "--count", "1")
    lines = result.out.splitlines()
    [row] = [line for line in lines if "engine:" in line]
    assert row.split("│")[1].strip() == "engine: no kept series reported"
    assert row.split("│")[2].strip() == "-"
    assert lines[lines.index(row) + 1].startswith("├")  # its own section, before the spec-decode rows


def _rows(out: str) -> dict[str, str]:
    """The metric/value rows of the printed tables."""
    return {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in out.splitlines()
        if line.count("│") == 3
    }


def _drafts_page(drafts: float) -> bytes:
    return f"# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total {drafts!r}\n".encode()


@pytest.mark.parametrize(
    ("start", "end", "text"),
    [
        (0.0, 5.0, "5"),
        (3.0, 0.0, "0"),  # went backwards: the server restarted, the interval counts nothing
        (0.0, 12.5, "12.5000"),
        (0.0, 999_999_999_999_999.0, "999999999999999"),
        (0.0, 1e15, "1000000000000000.0000"),
    ],
)
def test_table_number_format(server: PageServer, start: float, end: float, text: str) -> None:
    """Whole numbers below 1e15 print as integers, everything else with four decimals; a counter that went
    backwards is a reset, never a negative step."""
    url = server.serve("/metrics", _drafts_page(start), _drafts_page(end))
    result = run_cli(url, "--count", "1")
    rows = _rows(result.out)
    assert rows["vllm/spec_num_drafts"] == text
    assert rows.get("vllm/engines_reset") == ("1" if end < start else None)


def test_table_shows_infinite_metrics_as_inf(server: PageServer) -> None:
    """A metric that overflows to infinity prints as 'inf' in the table."""
    tiny = (
        b"# TYPE vllm:spec_decode_num_drafts_total counter\n"
        b'vllm:spec_decode_num_drafts_total{engine="0"} 1e-300\n'
        b"# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
        b'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 1e300\n'
    )
    url = server.serve("/metrics", spec_page(0, 0, 0, []), tiny)
    assert _rows(run_cli(url, "--count", "1").out)["vllm/spec_acceptance_length"] == "inf"


def test_connect_timeout_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection attempt that times out (a firewalled port) is the same one-line --timeout error."""
    attempts: list[tuple[object, object]] = []

    def connect_times_out(address: object, timeout: object = None, *args: object) -> socket.socket:
        attempts.append((address, timeout))
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", connect_times_out)
    result = run_cli("http://127.0.0.1:9/metrics", "--timeout", "0.25")
    assert_one_line_error(result, "http://127.0.0.1:9/metrics", "did not answer", "0.25 s", "--timeout")
    assert attempts == [(("127.0.0.1", 9), 0.25)]
