"""The gRPC client against the real daemon in compile-only mode (no GPU):
address discovery, every call's round trip, errors as TunedError, TLS + token."""

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

import tuned
from tuned import pb

from conftest import Daemon


def test_stubs_were_generated_at_build_time():
    assert pb.Problem.DESCRIPTOR.full_name == "tuned.v1.Problem"
    assert hasattr(tuned.v1.tuner_pb2_grpc, "TunerStub")


# ---- address discovery, as core/paths.cc and tunectl ----

def test_default_address_prefers_tuned_server(monkeypatch):
    monkeypatch.setenv("TUNED_SERVER", "gpu-node-1:50051")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/7")
    assert tuned.default_address() == "gpu-node-1:50051"
    assert tuned.Client().address == "gpu-node-1:50051"


def test_default_address_is_the_runtime_dir_socket(monkeypatch):
    monkeypatch.setenv("TUNED_SERVER", "")  # empty counts as unset
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/7")
    assert tuned.default_address() == "unix:/run/user/7/tuned/gpu0.sock"
    assert tuned.default_address(gpu=3) == "unix:/run/user/7/tuned/gpu3.sock"


def test_default_address_without_runtime_dir_is_under_tmp(monkeypatch):
    monkeypatch.delenv("TUNED_SERVER", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    assert tuned.default_address() == f"unix:/tmp/tuned-{os.getuid()}/gpu0.sock"
    monkeypatch.setenv("XDG_RUNTIME_DIR", "")
    assert tuned.default_socket_path(1) == f"/tmp/tuned-{os.getuid()}/gpu1.sock"


def test_client_finds_the_local_daemon(daemon, monkeypatch):
    monkeypatch.delenv("TUNED_SERVER", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(daemon.runtime_dir))
    with tuned.Client() as c:
        assert c.address == daemon.address
        assert c.device().compile_only


def test_no_daemon_is_unavailable(tmp_path):
    with tuned.Client(f"unix:{tmp_path}/nope.sock") as c:
        with pytest.raises(tuned.TunedError) as e:
            c.jobs()
    assert e.value.code == grpc.StatusCode.UNAVAILABLE
    assert "cannot reach tuned" in e.value.message


# ---- round trips ----

def test_device(client):
    d = client.device()
    assert isinstance(d, pb.Device)
    assert d.compile_only
    assert d.cc_major == 9
    assert d.nvrtc_version


def test_daemons_lists_the_daemon_itself(client):
    ds = client.daemons()
    assert len(ds) == 1
    assert isinstance(ds[0], pb.Daemon)
    assert ds[0].live
    assert ds[0].gpu_uuid == "compile-only"
    assert ds[0].kind.cc_major == 9
    assert 0 <= ds[0].heartbeat_age_seconds < ds[0].lease_seconds


def test_sweep_waits_and_reports_progress(client):
    updates = []
    job = client.sweep(33, 17, family="transpose", progress=updates.append)
    assert isinstance(job, pb.Job)
    assert job.state == pb.JOB_DONE
    assert job.total > 0 and job.done == job.total and job.failed == 0
    assert updates and updates[-1] == job
    assert list(job.problem.shape) == [33, 17]
    assert job.client == "local"

    assert client.job(job.id) == job
    listed = client.jobs()
    assert job.id in [j.id for j in listed]
    assert [j.id for j in listed] == sorted((j.id for j in listed), reverse=True)  # newest first
    assert len(client.jobs(limit=1)) == 1

    results = client.results(33, 17, family="transpose", top=3)
    assert len(results) == 3
    assert all(m.status == pb.MEASUREMENT_COMPILED and m.job_id == job.id for m in results)
    assert all(m.config.name.startswith("transpose") for m in results)
    assert len(client.results(33, 17, family="transpose")) == job.total


def test_sweep_without_wait_then_watch(client):
    job = client.sweep(48, 20, family="transpose", wait=False)
    assert job.state in (pb.JOB_QUEUED, pb.JOB_RUNNING, pb.JOB_DONE)
    assert job.id > 0
    done = client.watch(job.id, progress=False)
    assert done.id == job.id and done.state == pb.JOB_DONE


def test_sweep_plain_progress_lines_off_a_terminal(client, capsys):
    job = client.sweep(24, 40, family="transpose")
    err = capsys.readouterr().err
    assert f"job {job.id} transpose 24x40 done: {job.total}/{job.total} done, 0 failed, 0 left" in err
    assert len(err.splitlines()) <= 13  # one per 10% (11) and per state change (queued, running, done)


def test_sweep_tqdm_bar_on_a_terminal(client, capsys, monkeypatch):
    pytest.importorskip("tqdm", reason="tqdm is not installed (Debian: python3-tqdm)")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    job = client.sweep(20, 44, family="transpose")
    err = capsys.readouterr().err
    assert f"job {job.id} transpose 20x44" in err
    assert f"{job.total}/{job.total}" in err and "100%" in err and "\r" in err


def test_best_of_an_untuned_shape_is_not_found(client):
    with pytest.raises(tuned.TunedError) as e:
        client.best(1024, 1024, 1024)
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert "no tuned kernel" in e.value.message


def test_best_tune_if_missing_queues_a_sweep(client):
    with pytest.raises(tuned.TunedError) as e:  # far from every shape tuned here
        client.best(4096, 2048, family="transpose", tune_if_missing=True)
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert "queued job" in e.value.message
    job_id = int(e.value.message.rsplit("queued job ", 1)[1].split()[0])
    assert list(client.job(job_id).problem.shape) == [4096, 2048]
    client.watch(job_id, progress=False)


def test_compile_only_results_are_not_tuned(client):
    job = client.sweep(16, 16, family="transpose", progress=False)
    assert job.state == pb.JOB_DONE and not job.HasField("best")  # COMPILED is not OK: nothing timed
    assert [16, 16] not in [list(p.shape) for p in client.tuned()]


def test_a_sweep_with_no_verified_config_serves_the_baseline(tmp_path):
    """Every config a wrong answer (the fake GPU worker of tests/fake_worker.cc):
    the job is DONE and best is the baseline with no kernel."""
    fake = os.environ.get("TUNED_TEST_FAKE_WORKER", "")
    if not os.path.isfile(fake):
        pytest.skip("TUNED_TEST_FAKE_WORKER names no fake worker (client/python/tests/run.sh sets it)")
    d = Daemon(tmp_path, flags=("--worker", fake))
    try:
        with tuned.Client(d.address) as c:
            job = c.sweep(67, 131, 1, math="tf32", progress=False)
            assert job.state == pb.JOB_DONE and not job.HasField("best")
            assert job.error.startswith("no config passed verification; the baseline (cuBLAS TF32")
            best = c.best(67, 131, 1, math="tf32")
            assert best.use_baseline and not best.HasField("measurement")
            assert not best.cubin and not best.entry and not best.HasField("geometry")
            assert best.serving_reason.startswith("cuBLAS TF32: no kernel passed verification")
            assert best.baseline_name == "cuBLAS TF32" and best.baseline_ms > 0
            assert best.match == pb.MATCH_EXACT
            assert c.tuned() == []
    finally:
        assert d.stop() == 0, d.log.read_text()


def test_imported_kernel_round_trip(client):
    """A kernel imported as tuned: best (exact and nearest), geometry for the asked shape."""
    client.sweep(64, 32, family="transpose", progress=False)
    config = client.results(64, 32, family="transpose", top=1)[0].config
    kernel = pb.BestKernel(
        problem=tuned.problem(64, 32, family="transpose"), device=client.device(),
        measurement=pb.Measurement(config=config, status=pb.MEASUREMENT_OK, median_ms=0.01),
        cubin=b"\x7fELF fake", ptx="// ptx", entry="_Z9transposeiiPKfPf", baseline_ms=0.02,
        baseline_name="copy")
    job = client.import_kernel(kernel)
    assert job.state == pb.JOB_DONE and job.done == 1

    best = client.best(64, 32, family="transpose")
    assert best.match == pb.MATCH_EXACT
    assert best.measurement.config.name == config.name
    assert best.cubin == b"\x7fELF fake" and best.entry == kernel.entry
    assert list(best.arguments) == ["int rows", "int cols", "const float* in", "float* out"]
    assert len(best.geometry.grid) == 3 and len(best.geometry.block) == 3
    assert best.baseline_ms == pytest.approx(0.02)

    near = client.best(70, 30, family="transpose")
    assert near.match == pb.MATCH_NEAREST and list(near.tuned_shape) == [64, 32]
    assert list(near.problem.shape) == [70, 30]
    basic = client.best(64, 32, family="transpose", basic=True)
    assert not basic.cubin and not basic.ptx and basic.entry == kernel.entry
    assert any(list(p.shape) == [64, 32] for p in client.tuned("transpose"))

    other = pb.BestKernel()
    other.CopyFrom(kernel)
    other.device.cc_major = 8
    with pytest.raises(tuned.TunedError) as e:
        client.import_kernel(other)
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION


# ---- bad input ----

@pytest.mark.parametrize("shape, family, text", [
    ((0, 64, 64), "sgemm", "M must be at least 1"),
    ((64, 64, -5), "sgemm", "K must be at least 1"),
    ((64, 64), "sgemm", "takes 3 dimensions"),
    ((64, 64, 64), "transpose", "takes 2 dimensions"),
    ((64, 64, 2**70), "sgemm", "does not fit 64 bits"),
    ((64, 1.5, 64), "sgemm", "is not an integer"),
    (("64", 64, 64), "sgemm", "is not an integer"),
])
def test_bad_input_is_invalid_argument(client, shape, family, text):
    for call in (client.sweep, client.best, client.results):
        with pytest.raises(tuned.TunedError) as e:
            call(*shape, family=family)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT, e.value
        assert text in e.value.message


@pytest.mark.parametrize("shape, family, math, text", [
    ((64, 64, 64), "sgemm", "fp16", "unknown math mode 'fp16' (known: ieee_fp32, fp32_accurate, tf32)"),
    ((64, 64), "transpose", "tf32", "math mode MATH_TF32 is not supported by transpose"),
])
def test_bad_math_mode_is_invalid_argument(client, shape, family, math, text):
    for call in (client.sweep, client.best, client.results):
        with pytest.raises(tuned.TunedError) as e:
            call(*shape, family=family, math=math)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT, e.value
        assert text in e.value.message


def test_a_math_mode_is_part_of_the_problem(client):
    job = client.sweep(64, 64, 64, math="tf32", wait=False)
    assert job.problem.math == tuned.pb.MATH_TF32
    client.cancel(job.id)
    with pytest.raises(tuned.TunedError) as e:
        client.best(64, 64, 64, math="fp32_accurate")
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert "sgemm:a=f32,b=f32,c=f32,compute=f32,math=fp32_accurate 64x64x64" in e.value.message


def test_a_layout_is_part_of_the_problem():
    assert tuned.problem(64, 32, 16).layout == pb.LAYOUT_NN
    for name in ("nn", "nt", "tn", "tt"):
        p = tuned.problem(64, 32, 16, layout=name, math="tf32")
        assert p.layout == pb.Layout.Value("LAYOUT_" + name.upper()) and p.math == pb.MATH_TF32
        assert tuned.layout_name(p) == name and tuned.layout_name(p.layout) == name
    assert tuned.problem(1, 2, 3, layout=pb.LAYOUT_TT).layout == pb.LAYOUT_TT
    assert tuned.LAYOUTS == ("nn", "nt", "tn", "tt")
    for bad in ("NT", "n", "", None, True, 9, 1.0):
        with pytest.raises(tuned.TunedError) as e:
            tuned.problem(1, 2, 3, layout=bad)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "unknown layout" in e.value.message and "nn, nt, tn, tt" in e.value.message


def test_the_layout_reaches_every_problem_call():
    """best, sweep and results send Problem.layout; sweep its strategy and budget too."""
    c = tuned.Client("unix:/nowhere.sock")
    c._stub = Recorder(pb.Job(id=1, state=pb.JOB_QUEUED))
    c.sweep(64, 32, 16, layout="nt", math="tf32", wait=False, strategy="model", budget="16")
    c.sweep(64, 32, 16, wait=False)
    c.best(64, 32, 16, layout="tn")
    calls = c._stub.calls
    c._stub = Recorder(pb.ListMeasurementsResponse())
    c.results(64, 32, 16, layout="tt", top=1)
    (_, sweep, _), (_, plain, _), (_, best, _), (_, results, _) = calls + c._stub.calls
    assert sweep.problem == tuned.problem(64, 32, 16, layout="nt", math="tf32")
    assert sweep.problem.layout == pb.LAYOUT_NT
    assert (sweep.strategy, sweep.budget) == ("model", "16")
    assert plain.problem.layout == pb.LAYOUT_NN and (plain.strategy, plain.budget) == ("", "")
    assert best.problem.layout == pb.LAYOUT_TN and results.problem.layout == pb.LAYOUT_TT


def test_plain_progress_lines_name_a_layout(capsys):
    job = pb.Job(id=7, state=pb.JOB_DONE, total=4, done=4,
                 problem=tuned.problem(64, 32, 16, layout="nt"))
    tuned.client._Progress(None)(job)
    assert "job 7 sgemm 64x32x16 nt done: 4/4 done" in capsys.readouterr().err


def test_a_layout_is_its_own_problem_on_the_daemon(client):
    """The daemon keeps the job's layout, and a layout never tuned is not found."""
    job = client.sweep(64, 64, 64, layout="nt", wait=False)
    client.cancel(job.id)
    assert job.problem.layout == pb.LAYOUT_NT
    assert client.job(job.id).problem.layout == pb.LAYOUT_NT
    with pytest.raises(tuned.TunedError) as e:
        client.best(64, 64, 64, layout="tt", math="fp32_accurate")
    assert e.value.code == grpc.StatusCode.NOT_FOUND


# ---- dtypes: the sgemm family's f32, bf16, f16, bf16_f32 and f16_f32 problems ----

KNOWN_DTYPES = "known: f32, bf16, f16, bf16_f32, f16_f32"


def test_a_dtype_is_part_of_the_problem():
    """problem(dtype=) by name or enum value sets Problem.dtype (f32 by
    default, for transpose too); dtype_name reads it back; an unknown dtype
    is INVALID_ARGUMENT naming the known ones, before any daemon."""
    assert tuned.DTYPES == ("f32", "bf16", "f16", "bf16_f32", "f16_f32")
    assert tuned.problem(64, 32, 16).dtype == pb.DTYPE_F32 == 1
    assert tuned.problem(4, 4, family="transpose").dtype == pb.DTYPE_F32
    assert (pb.DTYPE_BF16_F32, pb.DTYPE_F16_F32) == (4, 5)
    for name, value in (("f32", 1), ("bf16", 2), ("f16", 3), ("bf16_f32", 4), ("f16_f32", 5)):
        p = tuned.problem(33, 17, 9, dtype=name, layout="nt")
        assert p == pb.Problem(family=pb.FAMILY_SGEMM, dtype=value, shape=[33, 17, 9],
                               math=pb.MATH_IEEE_FP32, layout=pb.LAYOUT_NT)
        assert tuned.problem(33, 17, 9, dtype=value, layout="nt") == p
        assert tuned.problem(33, 17, 9, dtype=name, layout="nt", family="gemm") == p  # its alias
        assert tuned.dtype_name(p) == name and tuned.dtype_name(value) == name
    assert tuned.dtype_name(pb.DTYPE_UNSPECIFIED) == "f32"  # the daemon reads it as f32
    assert tuned.dtype_name(pb.Problem()) == "f32"
    assert tuned.dtype_name(9) == "dtype 9"
    for bad in ("fp16", "BF16", "float16", "", "bf16_f16", "f32_f32", "BF16_F32", "bf16f32", None,
                True, 0, 6, 2.0):
        with pytest.raises(tuned.TunedError) as e:
            tuned.problem(64, 32, 16, dtype=bad)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert e.value.message == f"unknown dtype {bad!r} ({KNOWN_DTYPES})"


@pytest.mark.parametrize("dtype, name", [("bf16", "bf16"), ("bf16_f32", "bf16_f32"),
                                         (pb.DTYPE_F16_F32, "f16_f32")])
def test_a_kernel_specs_problem_takes_no_16bit_dtype(dtype, name):
    assert tuned.problem(8, family="softmax", dtype="f32").dtype == pb.DTYPE_UNSPECIFIED
    with pytest.raises(tuned.TunedError) as e:
        tuned.problem(8, family="softmax", dtype=dtype)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.message == (f"dtype {name} is for built-in families; the kernel spec "
                               "softmax's arguments have their own types")


def test_the_dtype_reaches_every_problem_call():
    """best, sweep and results send Problem.dtype (f32 where not given)."""
    c = tuned.Client("unix:/nowhere.sock")
    c._stub = Recorder(pb.Job(id=1, state=pb.JOB_QUEUED))
    c.sweep(33, 17, 9, dtype="bf16", layout="nt", wait=False)
    c.best(33, 17, 9, dtype="f16", basic=True)
    c.best(33, 17, 9)
    c.sweep(33, 17, 9, dtype="f16_f32", wait=False)
    c.best(33, 17, 9, dtype=pb.DTYPE_BF16_F32, layout="tn")
    calls = c._stub.calls
    c._stub = Recorder(pb.ListMeasurementsResponse())
    c.results(33, 17, 9, dtype=pb.DTYPE_BF16, top=1)
    c.results(33, 17, 9, dtype="bf16_f32")
    (m1, sweep, _), (m2, best, _), (_, plain, _), (m4, sweep32, _), (m5, best32, _), \
        (m3, results, _), (m6, results32, _) = calls + c._stub.calls
    assert (m1, m2, m3) == ("SubmitSweep", "GetBest", "ListMeasurements")
    assert sweep.problem == tuned.problem(33, 17, 9, dtype="bf16", layout="nt")
    assert sweep.problem.dtype == pb.DTYPE_BF16 and sweep.problem.layout == pb.LAYOUT_NT
    assert best.problem.dtype == pb.DTYPE_F16 and best.view == pb.BEST_VIEW_BASIC
    assert plain.problem.dtype == pb.DTYPE_F32
    assert results.problem.dtype == pb.DTYPE_BF16 and results.top == 1
    assert (m4, m5, m6) == ("SubmitSweep", "GetBest", "ListMeasurements")
    assert sweep32.problem.dtype == pb.DTYPE_F16_F32 == 5
    assert best32.problem.dtype == pb.DTYPE_BF16_F32 == 4 and best32.problem.layout == pb.LAYOUT_TN
    assert results32.problem.dtype == pb.DTYPE_BF16_F32
    for call in (c.sweep, c.best, c.results):
        with pytest.raises(tuned.TunedError, match=rf"unknown dtype 'f8' \({KNOWN_DTYPES}\)"):
            call(33, 17, 9, dtype="f8")


def test_plain_progress_lines_name_a_16bit_dtype(capsys):
    for dtype, text in (("bf16", "sgemm bf16 64x32x16 nt"), ("f16", "sgemm f16 64x32x16 nt"),
                        ("bf16_f32", "sgemm bf16_f32 64x32x16 nt"),
                        ("f16_f32", "sgemm f16_f32 64x32x16 nt"), ("f32", "sgemm 64x32x16 nt")):
        job = pb.Job(id=7, state=pb.JOB_DONE, total=4, done=4,
                     problem=tuned.problem(64, 32, 16, layout="nt", dtype=dtype))
        tuned.client._Progress(None)(job)
        assert f"job 7 {text} done: 4/4 done" in capsys.readouterr().err


def test_a_16bit_problem_is_its_own_problem_on_the_daemon(client):
    """The daemon keeps the job's dtype and compiles that dtype's kernels
    (gemm_bf16_*) for it; the f32 problem of the shape has none of its
    measurements; a dtype never tuned is not found, by its name."""
    job = client.sweep(33, 17, 9, dtype="bf16", layout="nt", progress=False)
    assert job.state == pb.JOB_DONE and job.total > 0 and job.failed == 0
    assert job.problem.dtype == pb.DTYPE_BF16 and job.problem.layout == pb.LAYOUT_NT
    assert client.job(job.id).problem.dtype == pb.DTYPE_BF16
    results = client.results(33, 17, 9, dtype="bf16", layout="nt")
    assert len(results) == job.total
    assert all(m.config.name.startswith("gemm_bf16_") for m in results), results[0].config.name
    assert client.results(33, 17, 9, layout="nt") == []
    assert client.results(33, 17, 9, dtype="f16", layout="nt") == []
    with pytest.raises(tuned.TunedError) as e:
        client.best(64, 64, 64, dtype="f16", layout="nt")
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert "sgemm:a=f16,b=f16,c=f16,compute=f32,layout=nt 64x64x64" in e.value.message


def test_an_fp32_output_problem_serves_a_kernel_with_a_float_c(client):
    """bf16_f32 is a problem of its own, whose kernels (gemm_bf16_f32_*)
    take bfloat16 A and B and a float C: a wgmma kernel of it, imported as
    tuned, is served with those arguments and three tensor maps, A's and
    B's of bf16 and C's (pointer argument 7, parameter 10) of f32, 32 of
    its 4-byte elements a 128-byte box row; tuned.Kernel takes it as
    bfloat16 A and B and a float32 C."""
    job = client.sweep(64, 64, 64, dtype="bf16_f32", layout="nt", budget="3", progress=False)
    assert job.state == pb.JOB_DONE and job.total == 3 and job.failed == 0
    assert job.problem.dtype == pb.DTYPE_BF16_F32
    results = client.results(64, 64, 64, dtype="bf16_f32", layout="nt")
    assert len(results) == 3
    assert all(m.config.name.startswith("gemm_bf16_f32_") for m in results), results[0].config.name
    assert client.results(64, 64, 64, dtype="bf16", layout="nt") == []
    wgmma = [m.config for m in results if "_wgmma_" in m.config.name]
    assert wgmma, [m.config.name for m in results]
    imported = client.import_kernel(pb.BestKernel(
        problem=tuned.problem(64, 64, 64, dtype="bf16_f32", layout="nt"), device=client.device(),
        measurement=pb.Measurement(config=wgmma[0], status=pb.MEASUREMENT_OK, median_ms=0.01),
        cubin=b"\x7fELF fake", ptx="// ptx", entry="_Z1kv", baseline_ms=0.02,
        baseline_name="cuBLAS bf16_f32"))
    assert imported.state == pb.JOB_DONE
    best = client.best(64, 64, 64, dtype="bf16_f32", layout="nt")
    assert best.match == pb.MATCH_EXACT and tuned.dtype_name(best.problem) == "bf16_f32"
    assert list(best.arguments) == ["int M", "int N", "int K", "float alpha",
                                    "const __nv_bfloat16* A", "const __nv_bfloat16* B",
                                    "float beta", "float* C"]
    maps = best.geometry.tensor_maps
    assert [(m.pointer_arg, m.param, m.dtype) for m in maps] == [
        (4, 8, pb.DTYPE_BF16), (5, 9, pb.DTYPE_BF16), (7, 10, pb.DTYPE_F32)]
    assert list(maps[2].dims) == [64, 64] and list(maps[2].strides_bytes) == [64 * 4]
    assert list(maps[2].box) == [32, 64] and list(maps[0].strides_bytes) == [64 * 2]
    torch = pytest.importorskip("torch", reason="torch is not installed: tuned.Kernel needs it")
    kernel = tuned.Kernel(best, device="cuda:0")
    assert kernel.dtype is torch.bfloat16 and kernel.out_dtype is torch.float32
    template, fast = kernel._template()  # the daemon's arguments, of the problem's types
    assert [template[i][0] for i in fast] == [ctypes.c_void_p] * 3 + [ctypes.c_float] * 2


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_the_daemon_refuses_a_16bit_problem_in_another_math_mode(client, dtype):
    for math in ("tf32", "fp32_accurate"):
        for call in (client.sweep, client.best, client.results):
            with pytest.raises(tuned.TunedError) as e:
                call(64, 64, 64, dtype=dtype, math=math)
            assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT, e.value
            assert f"math mode MATH_{math.upper()} is not supported by sgemm" in e.value.message


def test_the_daemon_refuses_a_16bit_transpose(client):
    for call in (client.sweep, client.best, client.results):
        with pytest.raises(tuned.TunedError) as e:
            call(64, 32, family="transpose", dtype="bf16")
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "dtype DTYPE_BF16 is not supported by transpose" in e.value.message


def test_unknown_job_is_not_found(client):
    for call in (client.job, client.cancel):
        with pytest.raises(tuned.TunedError) as e:
            call(4242)
        assert e.value.code == grpc.StatusCode.NOT_FOUND


# ---- TLS and tokens on a TCP port ----

@pytest.fixture(scope="module")
def tls_daemon(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")

    def ssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    ssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-days", "1", "-subj", "/CN=tuned-ca", "-keyout", "ca.key", "-out", "ca.pem")
    ssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-subj", "/CN=gpu-node-1", "-keyout", "server.key", "-out", "server.csr")
    (d / "server.ext").write_text("subjectAltName=DNS:gpu-node-1,DNS:localhost")
    ssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "1", "-extfile", "server.ext", "-out", "server.pem")
    token = os.urandom(24).hex()
    (d / "tokens").write_text(f"py:{token}\n")
    (d / "tokens").chmod(0o600)  # the daemon refuses a token file others may read
    (d / "py.token").write_text(f"  {token}\nsecond line\n")
    (d / "py.token").chmod(0o640)  # the group may read a secret, others may not
    daemon = Daemon(d, gpu=1, flags=["--listen", "127.0.0.1:0", "--tls-cert", str(d / "server.pem"),
                                     "--tls-key", str(d / "server.key"),
                                     "--token-file", str(d / "tokens")])
    daemon.tls_dir, daemon.token = d, token
    yield daemon
    assert daemon.stop() == 0


def test_tls_with_token(tls_daemon, monkeypatch):
    for name in ("TUNED_TOKEN", "TUNED_TOKEN_FILE", "TUNED_TLS_CA", "TUNED_TLS_SERVER_NAME"):
        monkeypatch.delenv(name, raising=False)
    d = tls_daemon.tls_dir
    address = f"localhost:{tls_daemon.port()}"
    with tuned.Client(address, tls_ca=str(d / "ca.pem"), token=tls_daemon.token) as c:
        job = c.sweep(64, 64, family="transpose", wait=False)
        assert c.job(job.id).client == "py"  # the token's name: the bearer token was sent
        c.cancel(job.id)
    # The certificate names gpu-node-1: an IP address needs tls_server_name.
    with tuned.Client(f"127.0.0.1:{tls_daemon.port()}", tls_ca=str(d / "ca.pem"),
                      tls_server_name="gpu-node-1", token=tls_daemon.token) as c:
        assert c.device().compile_only


def test_tls_settings_from_the_environment(tls_daemon, monkeypatch):
    d = tls_daemon.tls_dir
    monkeypatch.setenv("TUNED_SERVER", f"localhost:{tls_daemon.port()}")
    monkeypatch.setenv("TUNED_TLS_CA", str(d / "ca.pem"))
    monkeypatch.delenv("TUNED_TOKEN", raising=False)
    monkeypatch.setenv("TUNED_TOKEN_FILE", str(d / "py.token"))  # first line, stripped
    assert tuned.read_token_file(str(d / "py.token")) == tls_daemon.token
    with tuned.Client() as c:
        job = c.sweep(64, 64, family="transpose", wait=False)
        assert c.cancel(job.id).client == "py"


@pytest.mark.parametrize("mode, how", [(0o644, "open to"), (0o604, "open to"), (0o620, "writable by"),
                                       (0o601, "open to")])
def test_a_secret_file_others_may_read_is_refused(tls_daemon, tmp_path, monkeypatch, mode, how):
    """A token file or TLS key others may read (or anyone but its owner
    write) is refused before anything is sent, as ssh refuses such a key
    and as tunectl does; the group may read one."""
    for name in ("TUNED_TOKEN", "TUNED_TOKEN_FILE", "TUNED_TLS_KEY"):
        monkeypatch.delenv(name, raising=False)
    d = tls_daemon.tls_dir
    token = tmp_path / "open.token"
    token.write_text(tls_daemon.token + "\n")
    token.chmod(mode)
    want = f"token file {token} is {how} others \\(mode 0{mode:o}\\): chmod o-rwx,g-w {token}"
    with pytest.raises(tuned.TunedError, match=want) as e:
        tuned.read_token_file(str(token))
    assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
    monkeypatch.setenv("TUNED_TOKEN_FILE", str(token))
    with pytest.raises(tuned.TunedError, match=want):
        tuned.Client(f"localhost:{tls_daemon.port()}", tls_ca=str(d / "ca.pem"))
    key = tmp_path / "client.key"
    key.write_bytes((d / "server.key").read_bytes())
    key.chmod(mode)
    with pytest.raises(tuned.TunedError, match=f"--tls-key file {key} is {how} others") as e:
        tuned.Client(f"localhost:{tls_daemon.port()}", tls_ca=str(d / "ca.pem"), token=tls_daemon.token,
                     tls_cert=str(d / "server.pem"), tls_key=str(key))
    assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
    token.chmod(0o640)
    key.chmod(0o640)
    assert tuned.read_token_file(str(token)) == tls_daemon.token
    with tuned.Client(f"localhost:{tls_daemon.port()}", tls_ca=str(d / "ca.pem"),
                      tls_cert=str(d / "server.pem"), tls_key=str(key)) as c:
        assert c.device().compile_only


def test_tls_without_or_with_a_wrong_token_is_unauthenticated(tls_daemon, monkeypatch):
    for name in ("TUNED_TOKEN", "TUNED_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    ca = str(tls_daemon.tls_dir / "ca.pem")
    address = f"localhost:{tls_daemon.port()}"
    with tuned.Client(address, tls_ca=ca) as c:
        with pytest.raises(tuned.TunedError) as e:
            c.sweep(64, 64, family="transpose", wait=False)
        assert e.value.code == grpc.StatusCode.UNAUTHENTICATED
        assert "needs a token" in e.value.message
    with tuned.Client(address, tls_ca=ca, token="0123456789abcdef0123") as c:
        with pytest.raises(tuned.TunedError) as e:
            c.jobs()
        assert e.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_tls_unknown_ca_and_missing_files(tls_daemon, tmp_path, monkeypatch):
    monkeypatch.delenv("TUNED_TLS_CA", raising=False)
    with tuned.Client(f"localhost:{tls_daemon.port()}", token=tls_daemon.token) as c:
        with pytest.raises(tuned.TunedError) as e:
            c.jobs()  # the system's roots do not know the test CA
        assert e.value.code == grpc.StatusCode.UNAVAILABLE
    with pytest.raises(tuned.TunedError) as e:
        tuned.Client("localhost:1", tls_ca=str(tmp_path / "none.pem"))
    assert e.value.code == grpc.StatusCode.NOT_FOUND and "--tls-ca" in e.value.message
    monkeypatch.delenv("TUNED_TOKEN", raising=False)
    monkeypatch.setenv("TUNED_TOKEN_FILE", str(tmp_path / "none.token"))
    with pytest.raises(tuned.TunedError) as e:
        tuned.Client("localhost:1")
    assert e.value.code == grpc.StatusCode.NOT_FOUND and "token file" in e.value.message


# ---- kernel specs: problems, spec files, requests (no daemon) ----

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "kernels"


def test_a_spec_familys_problem_goes_by_name():
    p = tuned.problem(1024, 512, 256, family="matmul_tiled")
    assert p.family == pb.FAMILY_UNSPECIFIED and p.family_name == "matmul_tiled"
    assert list(p.shape) == [1024, 512, 256] and p.spec_hash == "" and p.dtype == 0
    v = tuned.problem(8, family="softmax", version="ab" * 32)
    assert v.family_name == "softmax" and v.spec_hash == "ab" * 32
    # Built-in names map to the enum, as before.
    assert tuned.problem(4, 4, family="transpose") == pb.Problem(
        family=pb.FAMILY_TRANSPOSE, dtype=pb.DTYPE_F32, shape=[4, 4])
    assert tuned.problem(1, 2, 3).family == pb.FAMILY_SGEMM and not tuned.problem(1, 2, 3).family_name
    assert tuned.family_name(p) == "matmul_tiled" and tuned.family_name(tuned.problem(1, 2, 3)) == "sgemm"
    for family, version, text in (("", None, "the family name is empty"),
                                  ("sgemm", "ab" * 32, "sgemm is a built-in family")):
        with pytest.raises(tuned.TunedError) as e:
            tuned.problem(1, 2, 3, family=family, version=version)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and text in e.value.message


def test_spec_json_of_a_toml_file_inlines_its_source_file():
    spec = json.loads(tuned.spec_json(EXAMPLES / "matmul" / "spec.toml"))
    assert "source_file" not in spec
    assert spec["source"] == (EXAMPLES / "matmul" / "matmul.cu").read_text()
    assert spec["name"] == "matmul_tiled" and spec["kernel"] == "matmul_tiled"
    assert spec["dims"] == ["m", "n", "k"]
    assert [(p["name"], p["values"]) for p in spec["params"]] == [("TILE", [8, 16, 32]), ("PAD", [0, 1])]
    assert [a["name"] for a in spec["arguments"]] == ["A", "B", "C", "m", "n", "k"]
    assert spec["arguments"][0] == {"name": "A", "type": "f32", "size": "m * k", "role": "in",
                                    "fill": "uniform"}
    assert spec["launch"] == {"block": ["TILE", "TILE"], "grid": ["n / TILE", "m / TILE"]}
    assert spec["verification"]["rtol"] == 1e-4 and spec["verification"]["launch"]["block"] == [16, 16]
    assert spec["default_config"] == {"TILE": 16, "PAD": 0}
    assert spec["sample_dims"] == [{"m": 1024, "n": 1024, "k": 1024}, {"m": 256, "n": 768, "k": 512}]
    assert isinstance(spec["default_config"]["TILE"], int)  # TOML integers stay integers


def test_spec_json_of_a_json_file_reads_source_file_beside_it(tmp_path, monkeypatch):
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "k" / "spec.json").write_text(json.dumps({"name": "k", "source_file": "k.cu"}))
    monkeypatch.chdir(tmp_path)  # relative to the spec file, not the current directory
    assert json.loads(tuned.spec_json("k/spec.json")) == {"name": "k",
                                                         "source": "__global__ void k() {}\n"}


def test_spec_json_of_a_dict(tmp_path, monkeypatch):
    spec = {"name": "scale", "source": "__global__ void scale(float* x) {}", "dims": ["n"],
            "params": [{"name": "T", "values": [64, 128]}]}
    assert json.loads(tuned.spec_json(spec)) == spec
    (tmp_path / "scale.cu").write_text("// scale")
    monkeypatch.chdir(tmp_path)  # a dict's source_file is relative to the current directory
    with_file = {"name": "scale", "source_file": "scale.cu"}
    assert json.loads(tuned.spec_json(with_file)) == {"name": "scale", "source": "// scale"}
    assert with_file == {"name": "scale", "source_file": "scale.cu"}  # not changed


def test_spec_json_errors(tmp_path):
    cases = [(tmp_path / "none.toml", grpc.StatusCode.NOT_FOUND, "cannot read spec file"),
             (tmp_path / "spec.yaml", grpc.StatusCode.INVALID_ARGUMENT, "is .toml or .json, not '.yaml'"),
             (tmp_path / "bad.toml", grpc.StatusCode.INVALID_ARGUMENT, "bad.toml: "),
             (tmp_path / "bad.json", grpc.StatusCode.INVALID_ARGUMENT, "bad.json: "),
             (tmp_path / "both.toml", grpc.StatusCode.INVALID_ARGUMENT, "both source and source_file"),
             (tmp_path / "missing.toml", grpc.StatusCode.NOT_FOUND, "cannot read source file"),
             (tmp_path / "date.toml", grpc.StatusCode.INVALID_ARGUMENT, "does not convert to JSON")]
    (tmp_path / "spec.yaml").write_text("name: x")
    (tmp_path / "bad.toml").write_text("name = \n")
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "both.toml").write_text('source = "x"\nsource_file = "x.cu"\n')
    (tmp_path / "missing.toml").write_text('source_file = "nowhere.cu"\n')
    (tmp_path / "date.toml").write_text("when = 2024-01-01\n")
    for path, code, text in cases:
        with pytest.raises(tuned.TunedError) as e:
            tuned.spec_json(path)
        assert e.value.code == code and text in e.value.message, (path, e.value)
    with pytest.raises(TypeError, match="a path or a dict, not int"):
        tuned.spec_json(3)


def test_spec_json_reads_only_bounded_regular_utf8_files(tmp_path):
    """A source_file that is a device (/dev/zero never ends), a folder,
    binary or oversized gets a clear error, and reading stops at the limit."""
    (tmp_path / "folder.cu").mkdir()
    (tmp_path / "binary.cu").write_bytes(b"__global__ void k() {}\n\xff\xfe")
    (tmp_path / "big.cu").write_bytes(b" " * (tuned.client.MAX_FILE_BYTES + 1))
    cases = [("/dev/zero", grpc.StatusCode.NOT_FOUND, "not a regular file"),
             ("folder.cu", grpc.StatusCode.NOT_FOUND, "a folder"),
             ("binary.cu", grpc.StatusCode.INVALID_ARGUMENT, "is not UTF-8 text (byte 23)"),
             ("big.cu", grpc.StatusCode.INVALID_ARGUMENT, "more than")]
    for source_file, code, text in cases:
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps({"name": "k", "source_file": source_file}))
        with pytest.raises(tuned.TunedError) as e:
            tuned.spec_json(spec)
        assert e.value.code == code and text in e.value.message, (source_file, e.value)


class Recorder:
    """Stands in for the gRPC stub: records (method, request, timeout), answers `answer`."""

    def __init__(self, answer):
        self.calls, self.answer = [], answer

    def __getattr__(self, method):
        def call(request, timeout=None):
            self.calls.append((method, request, timeout))
            return self.answer
        return call


def test_register_family_sends_json_or_the_message():
    c = tuned.Client("unix:/nowhere.sock")
    c._stub = Recorder(pb.FamilyInfo(name="matmul_tiled", created=True))
    assert c.register_family(str(EXAMPLES / "matmul" / "spec.toml")).name == "matmul_tiled"
    c.register_family({"name": "x"})
    spec = pb.KernelSpec(name="y", kernel="y", dims=["n"])
    c.register_family(spec)
    (m1, r1, t1), (m2, r2, _), (m3, r3, _) = c._stub.calls
    assert m1 == m2 == m3 == "RegisterFamily" and t1 == 120.0
    assert json.loads(r1.json)["source"] == (EXAMPLES / "matmul" / "matmul.cu").read_text()
    assert not r1.HasField("spec")
    assert json.loads(r2.json) == {"name": "x"}
    assert r3.spec == spec and r3.json == ""


def test_families_and_family_requests():
    c = tuned.Client("unix:/nowhere.sock")
    c._stub = Recorder(pb.ListFamiliesResponse(families=[pb.FamilyInfo(name="sgemm", builtin=True)]))
    assert [f.name for f in c.families()] == ["sgemm"]
    c._stub = Recorder(pb.FamilyInfo(name="m"))
    c.family("m")
    c.family("m", version="cd" * 32)
    assert [r for _, r, _ in c._stub.calls] == [pb.GetFamilyRequest(name="m"),
                                                pb.GetFamilyRequest(name="m", spec_hash="cd" * 32)]


def test_spec_problems_reach_every_problem_call():
    c = tuned.Client("unix:/nowhere.sock")
    c._stub = Recorder(pb.Job(id=1, state=pb.JOB_QUEUED))
    c.sweep(64, 64, 64, family="matmul_tiled", wait=False, version="ef" * 32)
    c.best(64, 64, 64, family="matmul_tiled")
    calls = c._stub.calls
    c._stub = Recorder(pb.ListMeasurementsResponse())
    assert c.results(64, 64, 64, family="matmul_tiled", top=2) == []
    c._stub.calls[:0] = calls
    want = tuned.problem(64, 64, 64, family="matmul_tiled")
    (_, sweep, _), (_, best, _), (_, results, _) = c._stub.calls
    assert sweep.problem.family_name == "matmul_tiled" and sweep.problem.spec_hash == "ef" * 32
    assert best.problem == want and results.problem == want and results.top == 2


# ---- kernel specs through the daemon (its RegisterFamily, ListFamilies, GetFamily) ----

def test_an_unknown_family_name_is_refused_by_the_daemon(client):
    for call in (client.sweep, client.best, client.results):
        with pytest.raises(tuned.TunedError) as e:
            call(64, 64, family="conv")
        assert e.value.code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND), e.value
        assert "'conv'" in e.value.message


def test_registering_needs_allow_user_kernels(client):
    with pytest.raises(tuned.TunedError) as e:
        client.register_family(EXAMPLES / "matmul" / "spec.toml")
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "allow-user-kernels" in e.value.message


@pytest.fixture(scope="module")
def spec_client(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("specs"), gpu=2, flags=("--allow-user-kernels",))
    with tuned.Client(d.address) as c:
        yield c
    assert d.stop() == 0, d.log.read_text()


def test_register_a_spec_and_read_it_back(spec_client):
    c = spec_client
    info = c.register_family(EXAMPLES / "matmul" / "spec.toml")
    assert info.name == "matmul_tiled" and not info.builtin and info.created
    assert len(info.spec_hash) == 64 and int(info.spec_hash, 16) >= 0
    assert info.space_size == 6  # TILE 3 values x PAD 2; the restriction is over dims
    again = c.register_family(EXAMPLES / "matmul" / "spec.toml")
    assert not again.created and again.spec_hash == info.spec_hash

    families = c.families()
    assert [f.name for f in families if f.builtin][:2] == ["sgemm", "transpose"]
    (spec,) = [f for f in families if f.name == "matmul_tiled"]
    assert not spec.builtin and spec.spec_hash == info.spec_hash
    assert list(spec.dims) == ["m", "n", "k"] and [p.name for p in spec.params] == ["TILE", "PAD"]
    assert spec.space_size == 6 and spec.metric_unit == "GFLOPS" and spec.versions == 1

    shown = c.family("matmul_tiled")
    assert shown.spec.name == "matmul_tiled" and shown.spec_hash == info.spec_hash
    assert shown.spec.source == (EXAMPLES / "matmul" / "matmul.cu").read_text()
    assert list(shown.spec.params[0].values) == [8, 16, 32]
    assert dict(shown.spec.default_config) == {"TILE": 16, "PAD": 0}
    assert c.family("matmul_tiled", version=info.spec_hash).spec == shown.spec
    for name, version in (("nope", None), ("matmul_tiled", "0" * 64)):
        with pytest.raises(tuned.TunedError) as e:
            c.family(name, version=version)
        assert e.value.code == grpc.StatusCode.NOT_FOUND


def test_sweep_a_spec_family(spec_client):
    c = spec_client
    info = c.register_family(EXAMPLES / "matmul" / "spec.toml")
    job = c.sweep(64, 64, 64, family="matmul_tiled", progress=False)
    assert job.state == pb.JOB_DONE, job.error
    assert job.problem.family_name == "matmul_tiled" and job.problem.spec_hash == info.spec_hash
    assert job.total == 6 and job.done == 6 and job.failed == 0  # 64 is a multiple of 8, 16, 32
    results = c.results(64, 64, 64, family="matmul_tiled")
    assert len(results) == 6 and all(m.status == pb.MEASUREMENT_COMPILED for m in results)
    assert {(m.config.params["TILE"], m.config.params["PAD"]) for m in results} == {
        (t, p) for t in (8, 16, 32) for p in (0, 1)}
    # 48 is no multiple of 32: the restriction over dims leaves TILE 8 and 16.
    assert c.sweep(48, 48, 48, family="matmul_tiled", progress=False).total == 4
    with pytest.raises(tuned.TunedError) as e:  # rank: the spec has 3 dims
        c.sweep(64, 64, family="matmul_tiled", wait=False)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
