"""``somnid doctor``: look at everything that makes somnid work, say what is wrong and what
to do about it.

Each check ends OK, WARN (works, but look) or FAIL (broken: the exit status is 1). With a
daemon running on the data dir, the checks ask it (health, index status); without one they
read the data dir themselves, without changing anything in it.
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import asdict

from somnid.cli._client import DaemonClient
from somnid.cli._common import EXIT_FAILED, EXIT_OK
from somnid.cli.doctor_checks import (
    Context,
    Finding,
    broken_check,
    config_finding,
    data_dir_check,
    index_check,
    model_check,
    modes_check,
)
from somnid.cli.doctor_history import history_check, sync_check
from somnid.cli.doctor_process import daemon_check, lock_check, service_check, token_check
from somnid.config import Settings, default_config_path


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    doctor = commands.add_parser(
        "doctor", parents=[common], help="check the set-up and say how to fix what is wrong"
    )
    doctor.add_argument("--json", action="store_true", help="the findings as JSON")
    doctor.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    config_path = args.config or default_config_path()
    findings = config_finding(config_path, args.config is not None)
    # What the checks read logs its own warnings ("leaving broken file alone"): the report
    # says each once, in its place; printed before it, they were said twice and out of order.
    quieted = logging.getLogger("somnid")
    level = quieted.level
    quieted.setLevel(logging.ERROR)
    try:
        with DaemonClient(settings, timeout=10.0) as client:
            ctx = Context(settings, client)
            checks = (
                data_dir_check, modes_check, lock_check, daemon_check, token_check,
                broken_check, model_check, index_check, history_check, sync_check, service_check,
            )  # fmt: skip
            for check in checks:
                try:
                    findings.extend(check(ctx))
                except OSError as exc:  # a data dir that is a file, say: said, and on
                    name = check.__name__.removesuffix("_check").replace("_", " ")
                    why = f"{exc.strerror}: {exc.filename}" if exc.strerror else str(exc)
                    findings.append(Finding("FAIL", name, f"could not be checked ({why})"))
    finally:
        quieted.setLevel(level)
    return report(findings, as_json=args.json)


def run_broken_config(args: argparse.Namespace, error: Exception) -> int:
    """The configuration does not load: that is the finding; nothing else can be checked."""
    path = args.config or default_config_path()
    finding = Finding(
        "FAIL",
        "config",
        f"the configuration does not load: {error}",
        f"fix {path} or the SOMNID_* variables (docs/configuration.md lists every setting)",
    )
    return report([finding], as_json=args.json)


def report(findings: list[Finding], *, as_json: bool) -> int:
    failed = sum(f.level == "FAIL" for f in findings)
    warned = sum(f.level == "WARN" for f in findings)
    if as_json:
        print(json.dumps({"findings": [asdict(f) for f in findings], "ok": not failed}))
        return EXIT_FAILED if failed else EXIT_OK
    width = max(len(f.check) for f in findings)
    for f in findings:
        print(f"{f.level:<5} {f.check:<{width}}  {f.message}")
        pad = " " * (6 + width + 2)
        for line in f.details:
            print(f"{pad}  {line}")
        if f.fix:
            print(f"{pad}→ {f.fix}")
    if failed or warned:
        print(f"\n{failed} failed, {warned} to look at")
    else:
        print("\nall good")
    return EXIT_FAILED if failed else EXIT_OK
