"""The demo corpus: real text that ships with Python itself, read at run time, never downloaded.

The corpus is the source of a fixed list of pure-Python standard-library modules (English
docstrings and comments mixed with code), concatenated in that order and cut at `max_bytes`.
Tokens are bytes (vocabulary 256). The first 90% is the training split, the rest validation.
`--corpus PATH` replaces it with any local text file.
"""

from __future__ import annotations

import os
import sysconfig

import torch

VOCAB_SIZE = 256  # byte-level tokenizer

# Pure-Python stdlib modules present in every CPython 3.9+ (stable, docstring-rich).
STDLIB_MODULES = (
    "textwrap",
    "difflib",
    "argparse",
    "heapq",
    "bisect",
    "fractions",
    "statistics",
    "calendar",
    "functools",
    "random",
    "string",
    "shlex",
    "csv",
    "pprint",
    "dataclasses",
    "enum",
    "typing",
    "inspect",
    "pathlib",
    "ast",
    "tokenize",
    "configparser",
    "datetime",
    "_pydecimal",
    "logging/__init__",
    "json/decoder",
    "json/encoder",
    "collections/__init__",
    "email/message",
    "http/client",
    "urllib/parse",
    "unittest/case",
    "doctest",
    "pydoc",
    "tarfile",
    "zipfile",
    "subprocess",
    "threading",
    "shutil",
    "tempfile",
    "gettext",
    "locale",
    "optparse",
    "contextlib",
    "weakref",
    "copy",
    "queue",
    "sched",
    "numbers",
)
DEFAULT_MAX_BYTES = 1 << 20  # 1 MiB
SEPARATOR = b"\n\n# ----\n\n"


def stdlib_corpus(max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[bytes, list[str]]:
    """Returns (text, names of the files used). Raises if the stdlib source is not installed."""
    root = sysconfig.get_paths()["stdlib"]
    parts, used, total = [], [], 0
    for name in STDLIB_MODULES:
        path = os.path.join(root, name + ".py")
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        parts.append(data)
        used.append(name + ".py")
        total += len(data) + len(SEPARATOR)
        if total >= max_bytes:
            break
    if not parts:
        raise RuntimeError(f"no standard-library source found under {root!r}; pass --corpus PATH")
    return SEPARATOR.join(parts)[:max_bytes], used


def load_corpus(path: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> dict:
    """Loads the corpus as uint8 tokens: {"train": (N,), "val": (M,), "source": str}."""
    if path:
        with open(path, "rb") as f:
            text = f.read()[:max_bytes]
        source = os.path.abspath(path)
    else:
        text, used = stdlib_corpus(max_bytes)
        source = f"Python {sysconfig.get_python_version()} stdlib: " + ", ".join(used)
    tokens = torch.frombuffer(bytearray(text), dtype=torch.uint8)
    n_train = int(len(tokens) * 0.9)
    return {
        "train": tokens[:n_train],
        "val": tokens[n_train:],
        "source": source,
        "num_bytes": len(tokens),
    }


class BatchSampler:
    """Random (batch, seq + 1) windows from a token stream, in an order fixed by the seed, so
    every training mode sees the same batches in the same order."""

    def __init__(self, tokens: torch.Tensor, batch: int, seq: int, seed: int):
        if len(tokens) <= seq + 1:
            raise ValueError(f"corpus split of {len(tokens)} bytes is too short for seq {seq}")
        self.tokens = tokens
        self.batch = batch
        self.seq = seq
        self.gen = torch.Generator().manual_seed(seed)

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (inputs, targets), both (batch, seq) int64."""
        high = len(self.tokens) - self.seq - 1
        starts = torch.randint(0, high, (self.batch,), generator=self.gen)
        idx = starts.unsqueeze(1) + torch.arange(self.seq + 1).unsqueeze(0)  # (B, S+1)
        w = self.tokens[idx].long()
        return w[:, :-1], w[:, 1:]


def fixed_batches(tokens: torch.Tensor, batch: int, seq: int, count: int, seed: int) -> list:
    """`count` evaluation batches, the same for every mode and every evaluation."""
    sampler = BatchSampler(tokens, batch, seq, seed)
    return [sampler.next() for _ in range(count)]
