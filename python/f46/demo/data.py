"""The demo corpus: Python source that is already installed, read at run time, never downloaded.

The corpus is every `.py` file of the running interpreter's standard library and of its
site-packages (torch, numpy, matplotlib, ... whatever is installed): English docstrings and
comments mixed with code, tens of megabytes, so a demo-sized model cannot memorise it. Files go
whole to one split, chosen by a hash of their path (5% to validation), so validation text is
held out by file, not cut from the end of the training text. Files are visited in the order of
that hash and taken until `max_bytes`; files over 512 KiB (generated tables) are skipped.
The text thus depends on the installation; its hash is reported with every run. Tokens are
bytes (vocabulary 256). `--corpus PATH` replaces it with a local text file, split
90/10 by position.
"""

from __future__ import annotations

import hashlib
import os
import site
import sys
import sysconfig

import torch

VOCAB_SIZE = 256  # byte-level tokenizer
DEFAULT_MAX_BYTES = 16 << 20  # 16 MiB
MAX_FILE_BYTES = 512 << 10
VAL_PERCENT = 5
SEPARATOR = b"\n\n# ----\n\n"
_SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__", ".git"}


def source_roots() -> list[tuple[str, str]]:
    """[(tag, directory)]: the stdlib, then every site-packages directory of this interpreter
    (and torch's, wherever it is installed). Existing directories only, without duplicates."""
    roots = [("stdlib", sysconfig.get_paths()["stdlib"])]
    sites = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    sites += [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    torch_dir = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))
    sites.append(torch_dir)
    roots += [("site", d) for d in sites]
    out, seen = [], set()
    for tag, d in roots:
        real = os.path.realpath(d)
        if os.path.isdir(real) and real not in seen:
            seen.add(real)
            out.append((tag, real))
    return out


def _file_key(label: str) -> int:
    """A stable 64-bit hash of a file's label (tag/relative path): order and split."""
    return int.from_bytes(hashlib.blake2b(label.encode(), digest_size=8).digest(), "little")


def python_files(roots: list[tuple[str, str]]) -> list[tuple[str, str, int]]:
    """[(label, path, size)] of the .py files under the roots (symlinked dirs not followed)."""
    files = []
    for tag, root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    size = os.path.getsize(path)
                except OSError:
                    continue
                if 0 < size <= MAX_FILE_BYTES:
                    label = f"{tag}/{os.path.relpath(path, root)}"
                    files.append((label, path, size))
    return files


def python_corpus(max_bytes: int = DEFAULT_MAX_BYTES) -> dict:
    """{"train": bytes, "val": bytes, "files": {"train": n, "val": n}, "roots": [...]}."""
    roots = source_roots()
    files = sorted(python_files(roots), key=lambda f: (_file_key(f[0]), f[0]))
    parts = {"train": [], "val": []}
    total = 0
    for label, path, _ in files:
        if total >= max_bytes:
            break
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        split = "val" if _file_key("split:" + label) % 100 < VAL_PERCENT else "train"
        parts[split].append(data)
        total += len(data) + len(SEPARATOR)
    if not parts["train"] or not parts["val"]:
        raise RuntimeError(
            f"too little Python source under {[r for _, r in roots]!r}; pass --corpus PATH"
        )
    return {
        "train": SEPARATOR.join(parts["train"]),
        "val": SEPARATOR.join(parts["val"]),
        "files": {k: len(v) for k, v in parts.items()},
        "roots": [r for _, r in roots],
    }


def _tokens(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def _digest(*parts: bytes) -> str:
    """Short content hash: runs on different installations read different text."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.hexdigest()[:12]


def load_corpus(path: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> dict:
    """Loads the corpus as uint8 tokens: {"train": (N,), "val": (M,), "source": str,
    "num_bytes": int, "files": {...} or None, "sha256": short hash of the text}."""
    if path:
        with open(path, "rb") as f:
            text = f.read()[:max_bytes]
        tokens = _tokens(text)
        n_train = int(len(tokens) * 0.9)
        return {
            "train": tokens[:n_train],
            "val": tokens[n_train:],
            "source": os.path.abspath(path),
            "num_bytes": len(tokens),
            "files": None,
            "sha256": _digest(text),
        }
    c = python_corpus(max_bytes)
    train, val = _tokens(c["train"]), _tokens(c["val"])
    return {
        "train": train,
        "val": val,
        "source": f"Python {sys.version.split()[0]} .py files under " + ", ".join(c["roots"]),
        "num_bytes": len(train) + len(val),
        "files": c["files"],
        "sha256": _digest(c["train"], c["val"]),
    }


class BatchSampler:
    """Random (batch, seq + 1) windows from a token stream, in an order fixed by the seed (a
    CPU generator), so every mode sees the same batches in the same order on any device."""

    def __init__(
        self, tokens: torch.Tensor, batch: int, seq: int, seed: int, device: torch.device = None
    ):
        if len(tokens) <= seq + 1:
            raise ValueError(f"corpus split of {len(tokens)} bytes is too short for seq {seq}")
        self.tokens = tokens if device is None else tokens.to(device)
        self.batch = batch
        self.seq = seq
        self.gen = torch.Generator().manual_seed(seed)
        self.offsets = torch.arange(seq + 1, device=self.tokens.device).unsqueeze(0)

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (inputs, targets), both (batch, seq) int64 on the tokens' device."""
        high = len(self.tokens) - self.seq - 1
        starts = torch.randint(0, high, (self.batch,), generator=self.gen)
        idx = starts.to(self.tokens.device).unsqueeze(1) + self.offsets  # (B, S+1)
        w = self.tokens[idx].long()
        return w[:, :-1], w[:, 1:]


def fixed_batches(
    tokens: torch.Tensor, batch: int, seq: int, count: int, seed: int, device=None
) -> list:
    """`count` evaluation batches, the same for every mode and every evaluation."""
    sampler = BatchSampler(tokens, batch, seq, seed, device)
    return [sampler.next() for _ in range(count)]
