"""One demo result from several runs of other seeds: python -m f46.demo.merge OUT DIR [DIR ...]

A run long enough for the verdict may not fit one device session or one command's time limit;
each part then runs other seeds with the same settings (`--seed k --seeds 1 --steps N`), and
this merges their DIR/results.json into OUT/results.json and OUT/loss_curves.png (and
OUT/quant_error.png when the runs have the error record, which each run carries) with the same
summary, verdict and report as one run. The parts must agree on everything but their seeds
(config, modes, corpus, device name, torch); a mismatch raises naming the field and the part.
"""

from __future__ import annotations

import json
import os
import sys

from .plot import plot_loss_curves, plot_quant_error
from .report import format_report, summarize

# results.json fields that must be equal in every part (the config without its seed count).
_SAME = ("device_name", "torch", "tokens_per_run", "corpus")


def _config_key(doc: dict) -> dict:
    return {k: v for k, v in doc["config"].items() if k != "seeds"}


def merge(docs: list, names: list | None = None) -> dict:
    """The results document of all parts' seeds, in part order; parts are results.json dicts."""
    if not docs:
        raise ValueError("merge needs at least one results document")
    names = names or [f"part {i}" for i in range(len(docs))]
    first = docs[0]
    modes = list(first["runs"])
    seen = set()
    for doc, name in zip(docs, names):
        if _config_key(doc) != _config_key(first):
            diff = sorted(
                k for k in _config_key(first) if doc["config"].get(k) != first["config"][k]
            )
            raise ValueError(
                f"merge: {name} has another config ({', '.join(diff)}) than {names[0]}"
            )
        for f in _SAME:
            if doc.get(f) != first.get(f):
                raise ValueError(
                    f"merge: {name} has {f}={doc.get(f)!r}, {names[0]} has {first.get(f)!r}"
                )
        if list(doc["runs"]) != modes:
            raise ValueError(f"merge: {name} ran modes {list(doc['runs'])}, {names[0]} {modes}")
        if any(len(doc["runs"][m]) != len(doc["seeds"]) for m in modes):
            raise ValueError(f"merge: {name} has a seed that not every mode finished")
        twice = seen.intersection(doc["seeds"])
        if twice:
            raise ValueError(f"merge: seed(s) {sorted(twice)} of {name} appear in an earlier part")
        seen.update(doc["seeds"])
    drop = ("runs", "seeds", "summary", "loss_curves", "quant_error_plot")
    out = {k: v for k, v in first.items() if k not in drop}
    out["seeds"] = [s for d in docs for s in d["seeds"]]
    out["runs"] = {m: [r for d in docs for r in d["runs"][m]] for m in modes}
    out["config"] = dict(first["config"], seeds=len(out["seeds"]))
    out["parts"] = [
        {"name": n, "seeds": d["seeds"], "wall_time_s": d.get("wall_time_s")}
        for d, n in zip(docs, names)
    ]
    out["wall_time_s"] = sum(d.get("wall_time_s") or 0.0 for d in docs)
    out["summary"] = summarize(out)
    out["loss_curves"] = out["quant_error_plot"] = None
    return out


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        raise SystemExit("usage: python -m f46.demo.merge OUT DIR [DIR ...]")
    out_dir, parts = argv[0], argv[1:]
    docs = []
    for d in parts:
        with open(os.path.join(d, "results.json")) as f:
            docs.append(json.load(f))
    doc = merge(docs, parts)
    os.makedirs(out_dir, exist_ok=True)
    try:
        doc["loss_curves"] = plot_loss_curves(doc, os.path.join(out_dir, "loss_curves.png"))
        doc["quant_error_plot"] = plot_quant_error(doc, os.path.join(out_dir, "quant_error.png"))
    except ImportError as e:
        print(f"no plot: {e}")
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(format_report(doc))
    print(f"merged {len(parts)} parts, seeds {doc['seeds']}: wrote {out_dir}/results.json")
    return doc


if __name__ == "__main__":
    main()
