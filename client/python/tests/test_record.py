"""tuned.Workload (no torch): the workload file that tuned.record writes, as
`tunectl workload sweep|report` reads it from the real daemon; and, where
torch and a GPU are present, tuned.record itself over a small model."""

import json
import subprocess

import pytest

import tuned
from conftest import bin_dir


def test_a_workload_merges_its_calls_and_writes_what_tunectl_reads(tmp_path, daemon):
    w = tuned.Workload()
    w.add("bf16", "nt", "ieee_fp32", (16, 4096, 4096), calls=3, gpu_ms=0.9)
    w.add("bf16", "nt", "ieee_fp32", (16, 4096, 4096), calls=2, gpu_ms=0.6)
    w.add("f32", "nn", "tf32", (64, 64, 64), calls=1, gpu_ms=2.0)
    w.add("bf16", "nt", "ieee_fp32", (16, 4096, 4096), calls=1, gpu_ms=0.5, epilogue="bias")
    assert w.problems() == [
        {"family": "sgemm", "dtype": "f32", "layout": "nn", "math": "tf32", "shape": [64, 64, 64],
         "calls": 1, "gpu_ms": 2.0},
        {"family": "sgemm", "dtype": "bf16", "layout": "nt", "math": "ieee_fp32",
         "shape": [16, 4096, 4096], "calls": 5, "gpu_ms": pytest.approx(1.5)},
        {"family": "sgemm", "dtype": "bf16", "layout": "nt", "math": "ieee_fp32",
         "shape": [16, 4096, 4096], "calls": 1, "gpu_ms": 0.5, "epilogue": "bias"}]
    path = tmp_path / "model.workload.json"
    w.write(path)
    assert json.loads(path.read_text())["format"] == "tuned-workload-1"
    report = subprocess.run(
        [str(bin_dir() / "tunectl"), "--server", daemon.address, "--json", "workload", "report",
         str(path)], capture_output=True, text=True, check=True)
    out = json.loads(report.stdout)
    assert [p["served"] for p in out["problems"]] == ["not tuned"] * 3
    assert out["recorded_ms"] == pytest.approx(4.0)
    assert out["saves_ms"] == pytest.approx(0)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_record_captures_a_models_gemms(tmp_path, monkeypatch, device):
    torch = pytest.importorskip("torch")
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("SKIPPED: no GPU (tuned.record times the calls with CUDA events)")
    if device == "cpu":  # the same path, the calls timed by the clock
        monkeypatch.setattr(tuned.record_module, "_DEVICE_TYPE", "cpu")
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 32)).to(device=device, dtype=dtype)
    x = torch.randn(2, 5, 64, device=device, dtype=dtype)
    path = tmp_path / "w.json"
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        with tuned.record(path) as r:
            for _ in range(3):
                model(x)
            torch.matmul(x[0], torch.randn(64, 8, device=device, dtype=dtype))
            x[0] @ torch.randn(8, 64, device=device, dtype=dtype).t()
            torch.addmm(torch.zeros(5, 8, device=device, dtype=dtype), x[0],
                        torch.randn(64, 8, device=device, dtype=dtype))
            x.sum()  # not a GEMM
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    name = "bf16" if device == "cuda" else "f32"
    problems = {(p["dtype"], p["layout"], tuple(p["shape"])): p for p in r.workload.problems()}
    assert set(problems) == {(name, "nt", (10, 128, 64)), (name, "nt", (10, 32, 128)),
                             (name, "nn", (5, 8, 64)), (name, "nt", (5, 8, 64))}
    assert problems[(name, "nt", (10, 128, 64))]["calls"] == 3
    assert problems[(name, "nt", (10, 32, 128))]["calls"] == 3
    assert problems[(name, "nn", (5, 8, 64))]["calls"] == 2  # matmul and addmm
    assert all(p["gpu_ms"] > 0 and p["math"] == "ieee_fp32" for p in problems.values())
    # A 16-bit nn.Linear's bias is its kernel's (the "bias" epilogue tuned.linear asks for).
    for shape in ((10, 128, 64), (10, 32, 128)):
        assert problems[(name, "nt", shape)].get("epilogue", "none") == (
            "bias" if device == "cuda" else "none")
    assert json.loads(path.read_text())["problems"] == r.workload.problems()


def test_a_problems_time_is_its_kept_calls_replayed_then_scaled_to_all_its_calls(tmp_path,
                                                                               monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(tuned.record_module, "_DEVICE_TYPE", "cpu")
    monkeypatch.setattr(tuned.record_module, "REPLAY_CALLS", 2)
    real, replayed = tuned.record_module._Recorder.replay_ms, []

    def replay_ms(self, kept, tf32):
        replayed.append([args for _, args, _ in kept])
        assert real(self, kept, tf32) > 0  # the kept calls run again
        return 3.0

    monkeypatch.setattr(tuned.record_module._Recorder, "replay_ms", replay_ms)
    layer = torch.nn.Linear(8, 4)
    xs = [torch.randn(3, 8) for _ in range(5)]
    with tuned.record(tmp_path / "w.json") as r:
        for x in xs:
            layer(x)
    [p] = r.workload.problems()
    assert p["calls"] == 5 and p["shape"] == [3, 4, 8]
    # The first two calls' own operands, replayed once the block ended.
    assert len(replayed) == 1 and len(replayed[0]) == 2
    assert all(a[0] is x for a, x in zip(replayed[0], xs))
    assert all(a[1] is layer.weight for a in replayed[0])
    assert p["gpu_ms"] == pytest.approx(3.0 / 2 * 5)
