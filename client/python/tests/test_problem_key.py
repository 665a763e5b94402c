"""tuned.problem_key against the daemon's C++ form (core/problem_key.h):
both read tests/data/problem_keys.txt, whose every key and problem each
gives the other, and whose malformed texts both refuse."""

import re
from pathlib import Path

import pytest
from google.protobuf import text_format

from tuned import pb
from tuned.problem_key import key_text, parse_key

VECTORS = Path(__file__).resolve().parents[3] / "tests" / "data" / "problem_keys.txt"


def _vectors():
    good, bad = [], []
    for line in VECTORS.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("!"):
            bad.append(line[1:])
        else:
            key, problem = line.split("\t")
            good.append((key, text_format.Parse(problem, pb.Problem())))
    return good, bad


GOOD, BAD = _vectors()


def test_the_vector_file_has_both_kinds():
    assert len(GOOD) >= 14 and len(BAD) >= 30


@pytest.mark.parametrize("key,problem", GOOD, ids=[k for k, _ in GOOD])
def test_a_key_and_its_problem_give_each_other(key, problem):
    assert key_text(problem) == key
    assert parse_key(key) == problem


@pytest.mark.parametrize("text", BAD)
def test_a_malformed_key_is_refused_with_its_text(text):
    with pytest.raises(ValueError, match="^problem key '" + re.escape(text) + "'"):
        parse_key(text)


def test_a_refusal_says_what_is_wrong():
    with pytest.raises(ValueError, match="not in canonical form .*'sgemm:a=f32,b=f32,c=f32,compute=f32'"):
        parse_key("sgemm:b=f32,a=f32,c=f32,compute=f32")
    with pytest.raises(ValueError, match="layout is one of nt, tn, tt"):
        parse_key("sgemm:layout=xx")
    with pytest.raises(ValueError, match="no dtype has these element types"):
        parse_key("sgemm:a=bf16,b=f16,c=f32,compute=f32")


def test_every_builtin_problem_form_round_trips():
    n = 0
    for family in (pb.FAMILY_SGEMM, pb.FAMILY_TRANSPOSE, pb.FAMILY_FAULT_TEST):
        for dtype in pb.DType.values():
            for layout in pb.Layout.values():
                for math in pb.Math.values():
                    for epilogue in pb.Epilogue.values():
                        p = pb.Problem(family=family, dtype=dtype, layout=layout, math=math,
                                       epilogue=epilogue)
                        assert parse_key(key_text(p)) == p
                        n += 1
    assert n == 3 * 6 * 4 * 3 * 5
