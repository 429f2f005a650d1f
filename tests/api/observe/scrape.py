"""Read a ``GET /metrics`` answer with prometheus-client's own parser (a malformed exposition
fails the parse, so every test that scrapes also checks the format)."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

from tests.api.problems import ResponseLike


class Scrape:
    def __init__(self, text: str) -> None:
        self.text = text
        self.samples: list[tuple[str, dict[str, str], float]] = [
            (sample.name, dict(sample.labels), sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]

    def value(self, name: str, **labels: str) -> float:
        """The one sample of ``name`` whose labels include ``labels``; 0 when there is none."""
        found = [v for n, ls, v in self.samples if n == name and _has(ls, labels)]
        assert len(found) <= 1, f"{name} {labels} matches {len(found)} samples"
        return found[0] if found else 0.0

    def labels(self, name: str) -> list[dict[str, str]]:
        return [ls for n, ls, _ in self.samples if n == name]


def _has(labels: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in wanted.items())


def scrape(response: ResponseLike) -> Scrape:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return Scrape(response.text)
