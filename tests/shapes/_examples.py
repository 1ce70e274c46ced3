"""Read the accept/reject examples shipped beside each domain grammar."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from guard._resources import data_path

GRAMMARS = data_path("grammars")


@dataclass(frozen=True)
class Example:
    domain: str
    accept: bool
    text: str
    slots: dict[str, str]
    shapes: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    why: str = ""
    index: int = 0

    @property
    def id(self) -> str:
        return f"{self.domain}-{'accept' if self.accept else 'reject'}-{self.index}"


def domains() -> list[str]:
    return sorted(p.name.removesuffix(".examples.yaml") for p in GRAMMARS.glob("*.examples.yaml"))


def load(domain: str, base: Path = GRAMMARS) -> list[Example]:
    raw = yaml.safe_load((base / f"{domain}.examples.yaml").read_text(encoding="utf-8"))
    common = raw.get("slots") or {}
    out: list[Example] = []
    for accept in (True, False):
        for i, item in enumerate(raw.get("accept" if accept else "reject") or []):
            if isinstance(item, str):
                item = {"text": item}
            slots = {**common, **(item.get("slots") or {})}
            out.append(
                Example(
                    domain,
                    accept,
                    item["text"],
                    slots,
                    tuple(item.get("shapes") or ()),
                    tuple(item.get("codes") or ()),
                    item.get("why", ""),
                    i,
                )
            )
    return out


def all_examples() -> list[Example]:
    return [e for d in domains() for e in load(d)]


def slot_names(slots: dict[str, str]) -> dict[str, list[str]]:
    """Type to slot names, the form the exports take to pin slot names."""
    out: dict[str, list[str]] = {}
    for name, t in slots.items():
        out.setdefault(t, []).append(name)
    return out


class ByteTokenizer:
    """A tokenizer whose tokens are the 256 bytes (plus end of text), to drive llguidance without a model."""

    def __init__(self) -> None:
        self.tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        self.eos_token_id = 256
        self.bos_token_id = None
        self.special_token_ids = [256]

    def __call__(self, text: bytes) -> list[int]:
        return list(text)
