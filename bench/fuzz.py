"""Fuzz somnid's HTTP API from its committed OpenAPI document (schemathesis), against a real
daemon on a loopback port.

Every operation gets generated requests, valid and invalid (schemathesis' coverage, fuzzing
and stateful phases), and every answer is checked: no 5xx, the status code is documented,
the content type and the body match the documented schema, 405s name the allowed methods,
invalid input is refused. The test suite runs the same driver with a few examples per
operation (``tests/stress/test_fuzz.py``); this script runs many more:

    .venv/bin/python bench/fuzz.py                   # 500 examples per operation, ~6 min
    .venv/bin/python bench/fuzz.py --examples 100 --seed 7

The two surfaces the document does not describe, ``WS /v1/llm/bridge`` and ``/mcp``, are
fuzzed after it by :mod:`bench.fuzz_protocols` (``--protocol-cases``, 2,000 by default:
random frames and JSON-RPC bodies, a dream now and then with the fuzzing host connected).

It prints a table per operation (requests, answers by status class, failures) and writes
everything to ``bench/results/fuzz.json`` (or ``--out``). It exits 1 when a check failed.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime as dt
import json
import platform
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import schemathesis
from schemathesis.engine import Status, events, from_schema

from bench.fuzz_protocols import fuzz_protocols
from somnid import __version__ as somnid_version

REPO = Path(__file__).resolve().parent.parent
OPENAPI = REPO / "openapi" / "openapi.json"
DEFAULT_OUT = REPO / "bench" / "results" / "fuzz.json"

# Operations of the document that are not fuzzed, and why. Not in the document at all, and
# fuzzed by bench/fuzz_protocols.py instead: the LLM bridge (a websocket,
# ``WS /v1/llm/bridge``) and ``/mcp`` (JSON-RPC). ``POST /v1/sleep/run`` is fuzzed in full, ``wait``
# included: the daemon here has no LLM, so a dream is a maintenance pass of milliseconds.
EXCLUDED = {
    "GET /v1/sleep/events": "Server-Sent Events: the stream stays open until somnid shuts "
    "down, so no request ends",
}
# schemathesis checks that are off, and why. Everything else it has is on.
DISABLED_CHECKS = {
    "positive_data_acceptance": "schema-valid is not always acceptable, and the answer is a "
    "documented 4XX problem: names must make a safe slug, dates must parse, a tool's "
    "arguments follow that tool's own schema (GET /v1/tools), If-Match must match",
    "ensure_resource_availability": "its links pair a created intention with restore, which "
    "wants an archived entry, or with a second cancel of a closed one: a 404 is right",
}
# Invalid input may also be refused as too large (413) or when a dream holds the store.
REFUSALS = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 503]
SAMPLE_CHARS = 600


@dataclass
class OperationStats:
    requests: int = 0
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    codes: collections.Counter[str] = field(default_factory=collections.Counter)
    """The ``code`` of each 4xx problem answer (``dream_running``, ``not_found``...)."""
    failures: int = 0


@dataclass
class FuzzFailure:
    operation: str
    phase: str
    check: str
    title: str
    message: str
    status: int | None
    request: str

    def describe(self) -> str:
        return (
            f"{self.operation} [{self.phase}] {self.check}: {self.title}\n"
            f"  answer {self.status}; {self.message}\n  {self.request}"
        )


@dataclass
class FuzzReport:
    seed: int
    max_examples: int
    elapsed_s: float = 0.0
    stop_reason: str = ""
    operations: dict[str, OperationStats] = field(default_factory=dict)
    failures: list[FuzzFailure] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    phases: dict[str, str] = field(default_factory=dict)

    @property
    def requests(self) -> int:
        return sum(stats.requests for stats in self.operations.values())

    def distinct_failures(self) -> list[FuzzFailure]:
        seen: dict[tuple[str, str, str, int | None], FuzzFailure] = {}
        for failure in self.failures:
            key = (failure.operation, failure.check, failure.title, failure.status)
            seen.setdefault(key, failure)
        return list(seen.values())

    def describe(self) -> str:
        lines = [f"{len(self.failures)} check failures ({len(self.distinct_failures())} distinct)"]
        lines += [failure.describe() for failure in self.distinct_failures()]
        lines += [f"error: {error}" for error in self.errors]
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "max_examples": self.max_examples,
            "elapsed_s": round(self.elapsed_s, 1),
            "stop_reason": self.stop_reason,
            "phases": self.phases,
            "requests": self.requests,
            "operations": {
                label: {
                    "requests": stats.requests,
                    "statuses": dict(sorted(stats.statuses.items())),
                    "failures": stats.failures,
                }
                for label, stats in sorted(self.operations.items())
            },
            "failures": [vars(failure) for failure in self.distinct_failures()],
            "failure_count": len(self.failures),
            "errors": self.errors,
            "excluded": EXCLUDED,
            "disabled_checks": DISABLED_CHECKS,
        }


def _config(
    base_url: str, headers: dict[str, str], max_examples: int, seed: int
) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "base-url": base_url,
            "headers": headers,
            "seed": seed,
            "workers": 1,
            "request-timeout": 60,
            "generation": {"max-examples": max_examples, "mode": "all", "database": "none"},
            "checks": {
                "negative_data_rejection": {"expected-statuses": REFUSALS},
                **{name: {"enabled": False} for name in DISABLED_CHECKS},
            },
            "operations": [{"include-name": label, "enabled": False} for label in sorted(EXCLUDED)],
        }
    )


def _short(data: bytes | str | None) -> str:
    if data is None:
        return ""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return text if len(text) <= SAMPLE_CHARS else text[:SAMPLE_CHARS] + f"… ({len(text)} chars)"


def _problem_code(body: bytes) -> str:
    try:
        document = json.loads(body)
    except ValueError:
        return "(not json)"
    code = document.get("code") if isinstance(document, dict) else None
    return code if isinstance(code, str) else "(no code)"


def _record(report: FuzzReport, event: events.ScenarioFinished) -> None:
    recorder = event.recorder
    for case_id, interaction in recorder.interactions.items():
        node = recorder.cases.get(case_id)
        label = node.value.operation.label if node is not None else recorder.label
        stats = report.operations.setdefault(label, OperationStats())
        stats.requests += 1
        response = interaction.response
        stats.statuses[f"{response.status_code // 100}xx" if response else "no answer"] += 1
        if response is not None and 400 <= response.status_code < 500:
            stats.codes[_problem_code(response.content)] += 1
    for case_id, checks in recorder.checks.items():
        for check in checks:
            if check.status != Status.FAILURE or check.failure_info is None:
                continue
            failure = check.failure_info.failure
            node = recorder.cases.get(case_id)
            label = node.value.operation.label if node is not None else recorder.label
            found = recorder.interactions.get(case_id)
            request = found.request if found is not None else None
            response = found.response if found is not None else None
            report.operations.setdefault(label, OperationStats()).failures += 1
            report.failures.append(
                FuzzFailure(
                    operation=label,
                    phase=event.phase.value,
                    check=check.name,
                    title=failure.title,
                    message=_short(failure.message),
                    status=response.status_code if response is not None else None,
                    request=(
                        f"{request.method} {_short(request.uri)} {_short(request.body)}"
                        if request is not None
                        else ""
                    ),
                )
            )


def run_fuzz(
    base_url: str,
    headers: dict[str, str],
    *,
    max_examples: int,
    seed: int,
    openapi: Path = OPENAPI,
) -> FuzzReport:
    """Run every schemathesis phase over ``openapi`` against the daemon at ``base_url``."""
    config = _config(base_url, headers, max_examples, seed)
    schema = schemathesis.openapi.from_path(openapi, config=config)
    report = FuzzReport(seed=seed, max_examples=max_examples)
    started = time.monotonic()
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            _record(report, event)
        elif isinstance(event, events.PhaseFinished):
            report.phases[event.phase.name.value] = event.status.value
        elif isinstance(event, events.NonFatalError):
            report.errors.append(f"{event.label}: {_short(str(event.value))}")
        elif isinstance(event, events.FatalError):
            report.errors.append(f"fatal: {_short(str(event.exception))}")
        elif isinstance(event, events.EngineFinished):
            report.stop_reason = event.stop_reason.value
    report.elapsed_s = time.monotonic() - started
    return report


def print_table(report: FuzzReport) -> None:
    classes = ["2xx", "4xx", "5xx", "no answer"]
    print(f"{'operation':<45} {'requests':>8} " + " ".join(f"{c:>9}" for c in classes) + "  fail")
    for label, stats in sorted(report.operations.items()):
        counts = " ".join(f"{stats.statuses.get(c, 0):>9}" for c in classes)
        print(f"{label:<45} {stats.requests:>8} {counts}  {stats.failures:>4}")
    print(
        f"\n{report.requests} requests over {len(report.operations)} operations in "
        f"{report.elapsed_s:.0f} s (seed {report.seed}, {report.max_examples} examples per "
        f"operation, phases {report.phases}); stopped: {report.stop_reason}"
    )
    for label, why in EXCLUDED.items():
        print(f"not fuzzed: {label}: {why}")
    print(report.describe() if report.failures or report.errors else "no check failed")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--examples", type=int, default=500, help="examples per operation")
    parser.add_argument("--seed", type=int, default=None, help="default: a random one")
    parser.add_argument(
        "--protocol-cases", type=int, default=2000, help="bridge and MCP cases (0: none)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from tests.daemon import start_daemon

    args = parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    with (
        tempfile.TemporaryDirectory(prefix="somnid-fuzz-") as work,
        start_daemon(Path(work) / "data") as daemon,
    ):
        report = run_fuzz(daemon.base_url, daemon.headers, max_examples=args.examples, seed=seed)
        protocols = asyncio.run(
            fuzz_protocols(
                daemon.base_url,
                daemon.headers,
                cases=args.protocol_cases,
                seed=seed,
                dream_every=50,
            )
        )
        with daemon.client() as client:
            healthy = client.get("/v1/health").status_code == 200
        problems = [line for line in daemon.log().splitlines() if '"level": "error"' in line]
    print_table(report)
    print(protocols.describe())
    print(f"healthy afterwards: {healthy}; error lines in the daemon's log: {len(problems)}")
    result = {
        "run": {
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "somnid": somnid_version,
            "schemathesis": schemathesis.__version__,
            "machine": f"{platform.system()} {platform.machine()}",
        },
        **report.as_json(),
        "protocols": {
            "bridge_cases": protocols.bridge_cases,
            "mcp_cases": protocols.mcp_cases,
            "mcp_statuses": protocols.statuses,
            "bridge_close_codes": protocols.close_codes,
            "chats_answered": protocols.chats_answered,
            "elapsed_s": round(protocols.elapsed_s, 1),
            "failures": protocols.failures[:20],
        },
        "healthy_after": healthy,
        "log_errors": [_short(line) for line in problems[:20]],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")
    clean = not report.failures and not report.errors and not protocols.failures
    return 0 if healthy and clean and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
