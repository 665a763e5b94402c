"""A problem's key: its identity without the shape, in the daemon's one text form.

    tuned.problem_key.key_text(problem)   # "sgemm:a=bf16,b=bf16,c=f32,compute=f32,layout=nt"
    tuned.problem_key.parse_key(text)     # the tuned.v1.Problem it names (no shape)

The family (a built-in one by its lower-case name, a kernel spec's version as
name@hash), then ':' and the fields a, b, c (the operands' element types),
compute (the type the product accumulates in), layout, math and epilogue, in
that order, as name=value; each value is the proto enum's name without its
prefix, in lower case, and a field at its default is left out. The C++ side
(core/problem_key.h) has the same rules; both read tests/data/problem_keys.txt.
"""

import re

from .v1 import tuner_pb2 as pb

# (field, proto enum, prefix, default) in the text's order.
_FIELDS = (
    ("a", pb.DType, "DTYPE_", pb.DTYPE_UNSPECIFIED),
    ("b", pb.DType, "DTYPE_", pb.DTYPE_UNSPECIFIED),
    ("c", pb.DType, "DTYPE_", pb.DTYPE_UNSPECIFIED),
    ("compute", pb.DType, "DTYPE_", pb.DTYPE_UNSPECIFIED),
    ("layout", pb.Layout, "LAYOUT_", pb.LAYOUT_NN),
    ("math", pb.Math, "MATH_", pb.MATH_IEEE_FP32),
    ("epilogue", pb.Epilogue, "EPILOGUE_", pb.EPILOGUE_NONE),
)
_ELEMENT_TYPES = (pb.DTYPE_F32, pb.DTYPE_BF16, pb.DTYPE_F16)
# A GEMM dtype's A and B type, and C's (core/include/tuned/dtype.h).
_INPUT = {pb.DTYPE_BF16_F32: pb.DTYPE_BF16, pb.DTYPE_F16_F32: pb.DTYPE_F16}
_OUTPUT = {pb.DTYPE_BF16_F32: pb.DTYPE_F32, pb.DTYPE_F16_F32: pb.DTYPE_F32}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HASH = re.compile(r"[0-9a-f]+\Z")


def _values(enum, prefix, default, field):
    """{text: number} of the values the field takes (not its default)."""
    return {name[len(prefix):].lower(): number for name, number in enum.items()
            if number != default and (field not in "abc compute".split() or number in _ELEMENT_TYPES)}


def _types(dtype):
    """(a, b, c, compute) of a tuner.proto DType."""
    if dtype == pb.DTYPE_UNSPECIFIED:
        return (pb.DTYPE_UNSPECIFIED,) * 4
    return (_INPUT.get(dtype, dtype), _INPUT.get(dtype, dtype), _OUTPUT.get(dtype, dtype), pb.DTYPE_F32)


def key_text(problem):
    """The key of a tuned.v1.Problem in canonical form (a built-in family by
    its enum, a kernel spec by family_name and spec_hash), as the daemon
    writes it; the shape is not part of it."""
    if problem.family_name:
        text = f"{problem.family_name}@{problem.spec_hash}"
    else:
        text = pb.Family.Name(problem.family)[len("FAMILY_"):].lower()
    values = dict(zip(("a", "b", "c", "compute"), _types(problem.dtype)),
                  layout=problem.layout, math=problem.math, epilogue=problem.epilogue)
    fields = [f"{field}={enum.Name(values[field])[len(prefix):].lower()}"
              for field, enum, prefix, default in _FIELDS if values[field] != default]
    return text + (":" + ",".join(fields) if fields else "")


def parse_key(text):
    """The tuned.v1.Problem (no shape) that a key's text names. ValueError,
    saying what is wrong, for a text that is no key in canonical form, or
    whose element types no tuner.proto DType has."""
    def error(why):
        shown = text if len(text) <= 64 else text[:64] + f"...' ({len(text)} bytes)"
        return ValueError(f"problem key '{shown}': {why}")

    head, colon, rest = text.partition(":")
    name, at, spec_hash = head.partition("@")
    if not _NAME.match(name):
        raise error("the family must be a name (letters, digits, '_'), then '@' and a spec's hash "
                    "for a kernel spec, then ':' and the fields")
    problem = pb.Problem()
    if at:
        if not _HASH.match(spec_hash):
            raise error("a kernel spec's version is its hash in lower-case hex after '@'")
        problem.family_name, problem.spec_hash = name, spec_hash
    else:
        family = "FAMILY_" + name.upper()
        if name != name.lower() or family not in pb.Family.keys():
            raise error(f"no built-in family is named '{name}' (a kernel spec's key names its version: "
                        "name@hash)")
        problem.family = pb.Family.Value(family)
    values = {field: default for field, _, _, default in _FIELDS}
    seen = set()
    for item in rest.split(",") if colon else ():
        field, _, value = item.partition("=")
        spec = next((f for f in _FIELDS if f[0] == field), None)
        if spec is None:
            raise error(f"unknown field '{field}' (fields: {', '.join(f[0] for f in _FIELDS)}, "
                        "each as name=value)")
        if field in seen:
            raise error(f"field {field} is given twice")
        seen.add(field)
        allowed = _values(spec[1], spec[2], spec[3], field)
        if value not in allowed:
            raise error(f"{field} cannot be '{value}' ({field} is one of {', '.join(allowed)})")
        values[field] = allowed[value]
    problem.layout, problem.math, problem.epilogue = values["layout"], values["math"], values["epilogue"]
    types = tuple(values[f] for f in ("a", "b", "c", "compute"))
    dtype = next((d for d in pb.DType.values() if _types(d) == types), None)
    if dtype is None:
        raise error("no dtype has these element types (a, b, c and compute)")
    problem.dtype = dtype
    if key_text(problem) != text:
        raise error("not in canonical form (fields in the order a, b, c, compute, layout, math, "
                    f"epilogue; a default left out): '{key_text(problem)}'")
    return problem
