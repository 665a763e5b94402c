"""bench/torch_drop_in.py's own logic without a GPU or a daemon: the shapes
file, the layouts' operands (transposed views of contiguous tensors), the
interleaved timing, the SUMMARY line, and the whole flow in --dry-run."""

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "torch_drop_in.py"
if not BENCH.is_file():
    pytest.skip(f"no {BENCH} (the tests run from a copy of client/python alone)",
                allow_module_level=True)
spec = importlib.util.spec_from_file_location("torch_drop_in", BENCH)
drop_in = importlib.util.module_from_spec(spec)
spec.loader.exec_module(drop_in)  # imports neither torch nor tuned


def test_read_shapes_skips_comments_and_names_bad_lines(tmp_path):
    f = tmp_path / "shapes.txt"
    f.write_text("# M N K\n512 512 512\n\n16 4096 4096  # skinny\n")
    assert drop_in.read_shapes(f) == [(512, 512, 512), (16, 4096, 4096)]
    for bad in ("512 512\n", "1 2 x\n", "0 1 1\n", "# only\n"):
        f.write_text(bad)
        with pytest.raises(ValueError, match="shapes.txt"):
            drop_in.read_shapes(f)


def test_layouts_and_modes_lists():
    assert drop_in.parse_list("nt,tn", drop_in.LAYOUTS, "layout") == ["nt", "tn"]
    assert drop_in.parse_list("all", drop_in.MODES, "mode") == list(drop_in.MODES)
    with pytest.raises(Exception, match="unknown layout xn"):
        drop_in.parse_list("nn,xn", drop_in.LAYOUTS, "layout")


def test_interleaved_alternates_the_ways_and_takes_medians():
    order = []

    def block(fn, reps):
        order.append(fn())
        return {"a": [1.0, 9.0, 2.0], "b": [4.0, 4.0, 40.0]}[fn()][order.count(fn()) - 1] * reps
    ms = drop_in.interleaved({"a": lambda: "a", "b": lambda: "b"}, reps=10, rounds=3,
                             time_block=block)
    assert order == ["a", "b", "b", "a", "a", "b"]
    assert ms == {"a": 2.0, "b": 4.0}


def test_summary_counts_slower_pairs_and_geomeans_per_mode():
    rows = [{"mode": "ieee_fp32", "ratio": 2.0}, {"mode": "ieee_fp32", "ratio": 0.5},
            {"mode": "tf32", "ratio": 0.96}, {"mode": "tf32", "ratio": 0.97}]
    line = drop_in.summary(rows, 12, 4, 3)
    assert line == ("SUMMARY torch_drop_in shapes=12 layouts=4 modes=3 slower_than_torch=2 "
                    "geomean_ieee=1.000 geomean_fp32_accurate=nan geomean_tf32=0.965")
    assert math.isnan(drop_in.geomean([]))


def test_the_error_bound_is_three_times_torchs():
    assert drop_in.within(3e-6, 1e-6) and not drop_in.within(3.2e-6, 1e-6)
    assert drop_in.within(1e-7, 0.0)


torch_reason = "torch is not installed: the operands and the dry run need it"


@pytest.mark.parametrize("layout", drop_in.LAYOUTS)
def test_operands_in_a_layout_are_transposed_views(layout):
    torch = pytest.importorskip("torch", reason=torch_reason)
    import tuned.layout

    a, b, w = drop_in.make_operands(torch, 6, 5, 4, layout, "cpu", torch.Generator().manual_seed(0))
    assert a.shape == (6, 4) and b.shape == (4, 5)
    assert tuned.layout.operand_layout(a) + tuned.layout.operand_layout(b) == layout
    assert (a != 0).all() and (b != 0).all()
    if layout == "nt":
        assert w.is_contiguous() and w.shape == (5, 4) and w.data_ptr() == b.data_ptr()
        assert tuned.layout.weight_layout(w) == "t"
    else:
        assert w is None


def test_dry_run_prints_a_line_per_problem_and_the_summary(tmp_path):
    pytest.importorskip("torch", reason=torch_reason)
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("64 32 16\n8192 128 8192\n")
    result = subprocess.run([sys.executable, str(BENCH), "--shapes", str(shapes), "--dry-run",
                             "--reps", "3", "--rounds", "2", "--dry-max", "24",
                             "--modes", "ieee_fp32,tf32"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    measured = [x for x in lines if " ratio " in x]
    assert len(measured) == 2 * 4 * 2
    assert any(x.startswith("24x24x16 nt tf32 ") for x in measured)
    assert not any("WRONG" in x for x in measured)
    assert lines[-1].startswith("SUMMARY torch_drop_in shapes=2 layouts=4 modes=2 "
                                "slower_than_torch=")
    assert "geomean_fp32_accurate=nan" in lines[-1]
