"""The layer benchmark and profile scripts run end to end (on the CPU, tiny shape, timing and
profiling replaced by single calls), so that a GPU run is not spent on a script error. The
figures themselves come only from a GPU (scripts/gpu_check.sh layer profile)."""

from __future__ import annotations

import pathlib
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    for name in ("bench_layer", "profile_layer"):
        sys.modules.pop(name, None)
    import bench_layer

    monkeypatch.setattr(bench_layer, "DEVICE", "cpu")
    monkeypatch.setattr(bench_layer, "MOE", [("tiny", 4, 256, 64, 96)])
    monkeypatch.setattr(bench_layer, "FORCED_PLANS", {"tiny": ("a",)})
    calls = []

    def once(fn):
        calls.append(fn)
        fn()
        return 1.0

    monkeypatch.setattr(bench_layer, "median_ms", once)
    monkeypatch.setattr(bench_layer, "peak_gib", lambda fn: once(fn) * 0.0)
    monkeypatch.setattr(bench_layer, "held_gib", lambda fn: (fn(), 0.0)[1])
    return bench_layer, calls


def test_bench_layer_prints_every_table(bench, capsys):
    bench_layer, calls = bench
    bench_layer.main()
    out = capsys.readouterr().out
    for row in ("| bf16 |", "quantized bwd |", "dequantized bwd |", "micro-batches"):
        assert row in out
    # BF16 step and peak; per mode: step, peak, accumulation with and without reuse; per mode
    # the step with the plan forced
    assert len(calls) == 2 + 2 * 4 + 2
    assert "quantized bwd, plan a |" in out
    # geometric means: automatic plan per mode, forced plans per mode, reuse per mode
    assert out.count("| geometric mean |") == 6
    assert "| geometric mean | f46 4/6, quantized bwd, FORCED_PLANS |" in out


def test_profile_layer_summarizes_each_mode(bench, capsys, monkeypatch):
    import profile_layer

    seen = []

    def fake_times(fn):
        fn()
        seen.append(fn)
        return {"cutlass_grouped_gemm": 2.0, "quantize_tile_kernel": 1.0}

    monkeypatch.setattr(profile_layer, "kernel_times", fake_times)
    profile_layer.main()
    out = capsys.readouterr().out
    assert len(seen) == 3  # BF16, quantized, dequantized
    assert out.count("ms of kernels per step") == 2 and "| quantize tile | 1.00 |" in out
