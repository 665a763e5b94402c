"""gRPC client of the tuned daemon (proto/tuned/v1/tuner.proto).

Shapes are row-major: sgemm takes (M, N, K), C(MxN) = op(A) @ op(B) with
op(A) (MxK), op(B) (KxN) in the problem's layout ("nn": A(MxK) @ B(KxN); see
problem()); transpose takes (ROWS, COLS); a registered kernel spec's family (its name, see
register_family) takes the values of its spec's dims in their order. Times are in milliseconds. Every method returns
the daemon's proto messages (tuned.v1.tuner_pb2) and raises TunedError, which
carries the gRPC status code, for every failure.
"""

import json
import os
import stat
import sys

try:  # Python 3.11 and later; before, the tomli package (pyproject.toml's dependency)
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - depends on the interpreter
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        tomllib = None

import grpc

from .v1 import tuner_pb2 as pb
from .v1 import tuner_pb2_grpc as pb_grpc

CALL_TIMEOUT_S = 30.0  # per unary call, as the C++ client
REGISTER_TIMEOUT_S = 120.0  # RegisterFamily compiles a config first

_ENDED = (pb.JOB_DONE, pb.JOB_FAILED, pb.JOB_CANCELLED)


class TunedError(Exception):
    """Any failure of the client: `.code` is a grpc.StatusCode (the daemon's,
    or INVALID_ARGUMENT / NOT_FOUND / FAILED_PRECONDITION / INTERNAL for what
    the client found itself), `.message` the text."""

    def __init__(self, code, message):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class DTypeError(TunedError, TypeError):
    """A tensor of a dtype that the call does not take (a GEMM's operands of
    another dtype than its kernel's, or of two dtypes), or a math mode that
    the operands' dtype does not take: a TunedError INVALID_ARGUMENT whose
    message names the dtypes, and a TypeError, as the other wrong tensors'
    errors are."""

    def __init__(self, message):
        super().__init__(grpc.StatusCode.INVALID_ARGUMENT, message)


def default_socket_path(gpu=0):
    """The socket of the local daemon owning GPU `gpu`, as core/paths.cc:
    $XDG_RUNTIME_DIR/tuned/gpu<N>.sock, else /tmp/tuned-<uid>/gpu<N>.sock."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    base = f"{runtime}/tuned" if runtime else f"/tmp/tuned-{os.getuid()}"
    return f"{base}/gpu{gpu}.sock"


def default_address(gpu=0):
    """$TUNED_SERVER when set and not empty, else "unix:" + default_socket_path(gpu)."""
    return os.environ.get("TUNED_SERVER") or "unix:" + default_socket_path(gpu)


def check_secret_file(path, what):
    """TunedError PERMISSION_DENIED, naming the mode and the chmod, where the
    secret file `path` (a token file, a TLS private key; `what` names it) is
    readable by others or writable by anyone but its owner, as ssh asks of a
    private key (the group may read it: a service's group, a Kubernetes
    Secret's fsGroup); the rule of the C++ side (core/paths.h
    CheckSecretFile). Nothing where it cannot be stat'ed (its read says so)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if mode & (stat.S_IROTH | stat.S_IWOTH | stat.S_IWGRP | stat.S_IXOTH):
        how = "open to" if mode & (stat.S_IROTH | stat.S_IXOTH) else "writable by"
        raise TunedError(grpc.StatusCode.PERMISSION_DENIED,
                         f"{what} {path} is {how} others (mode {stat.S_IMODE(mode):04o}): "
                         f"chmod o-rwx,g-w {path} (as ssh asks of a private key)")


def read_token_file(path):
    """The first line of `path` without surrounding whitespace; TunedError
    NOT_FOUND if unreadable, PERMISSION_DENIED if others may read it
    (check_secret_file)."""
    check_secret_file(path, "token file")
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().strip()
    except OSError as e:
        raise TunedError(grpc.StatusCode.NOT_FOUND, f"cannot read token file {path}: {e}") from None


# The largest spec or source file read (the daemon takes 1 MiB of source):
# a device such as /dev/zero never ends.
MAX_FILE_BYTES = 2 << 20


def _read(path, what, secret=False):
    """The bytes of a regular file of at most MAX_FILE_BYTES; TunedError
    NOT_FOUND where it cannot be read or is no regular file (a folder, a
    device), INVALID_ARGUMENT where it is larger; a `secret` (a private key)
    PERMISSION_DENIED where others may read it (check_secret_file)."""
    if secret:
        check_secret_file(path, f"{what} file")
    try:
        if not os.path.isfile(path):
            kind = "a folder" if os.path.isdir(path) else "not a regular file"
            raise TunedError(grpc.StatusCode.NOT_FOUND, f"cannot read {what} file {path}: {kind}")
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise TunedError(grpc.StatusCode.NOT_FOUND, f"cannot read {what} file {path}: {e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise TunedError(grpc.StatusCode.INVALID_ARGUMENT,
                         f"{what} file {path}: more than {MAX_FILE_BYTES} bytes")
    return data


# Layout names (tuner.proto Layout): op(A) then op(B), "n" as stored, "t" transposed.
LAYOUTS = ("nn", "nt", "tn", "tt")


def layout_value(layout):
    """tuner.proto Layout of a layout's name ("nn", "nt", "tn", "tt") or enum
    value; TunedError INVALID_ARGUMENT for another."""
    if isinstance(layout, str):
        if layout in LAYOUTS:
            return pb.Layout.Value("LAYOUT_" + layout.upper())
    elif isinstance(layout, int) and not isinstance(layout, bool) and layout in pb.Layout.values():
        return layout
    raise TunedError(grpc.StatusCode.INVALID_ARGUMENT,
                     f"unknown layout {layout!r} (known: {', '.join(LAYOUTS)})")


def layout_name(value):
    """"nt" for LAYOUT_NT, and so on; for a tuned.v1.Problem, its layout's name."""
    if isinstance(value, pb.Problem):
        value = value.layout
    try:
        return pb.Layout.Name(value).removeprefix("LAYOUT_").lower()
    except ValueError:
        return f"layout {value}"


# Epilogue names (tuner.proto Epilogue) of 16-bit sgemm problems: what is
# applied to C after the product, as F.linear's bias and an activation.
EPILOGUES = ("none", "bias", "bias_relu", "bias_gelu_tanh", "bias_gelu_erf")


def epilogue_value(epilogue):
    """tuner.proto Epilogue of an epilogue's name (EPILOGUES) or enum value;
    TunedError INVALID_ARGUMENT for another."""
    if isinstance(epilogue, str):
        if epilogue in EPILOGUES:
            return pb.Epilogue.Value("EPILOGUE_" + epilogue.upper())
    elif (isinstance(epilogue, int) and not isinstance(epilogue, bool)
          and epilogue in pb.Epilogue.values()):
        return epilogue
    raise TunedError(grpc.StatusCode.INVALID_ARGUMENT,
                     f"unknown epilogue {epilogue!r} (known: {', '.join(EPILOGUES)})")


# Element type names (tuner.proto DType) of sgemm problems: "f32" (fp32 A, B,
# C), "bf16" and "f16" (16-bit A, B and C, fp32 accumulation), "bf16_f32" and
# "f16_f32" (16-bit A and B, fp32 accumulation and C).
DTYPES = ("f32", "bf16", "f16", "bf16_f32", "f16_f32")
_DTYPE_VALUES = frozenset(pb.DType.Value("DTYPE_" + name.upper()) for name in DTYPES)


def dtype_value(dtype):
    """tuner.proto DType of an element type's name (one of DTYPES: "f32",
    "bf16", "f16", "bf16_f32", "f16_f32") or enum value (DTYPE_F32,
    DTYPE_BF16, DTYPE_F16, DTYPE_BF16_F32, DTYPE_F16_F32); TunedError
    INVALID_ARGUMENT, naming the known ones, for another."""
    if isinstance(dtype, str):
        if dtype in DTYPES:
            return pb.DType.Value("DTYPE_" + dtype.upper())
    elif isinstance(dtype, int) and not isinstance(dtype, bool) and dtype in _DTYPE_VALUES:
        return dtype
    raise TunedError(grpc.StatusCode.INVALID_ARGUMENT,
                     f"unknown dtype {dtype!r} (known: {', '.join(DTYPES)})")


def dtype_name(value):
    """"bf16" for DTYPE_BF16, "bf16_f32" for DTYPE_BF16_F32, and so on (the
    names of DTYPES); "f32" for DTYPE_F32 and for DTYPE_UNSPECIFIED, which
    the daemon reads as f32; for a tuned.v1.Problem, its dtype's name."""
    if isinstance(value, pb.Problem):
        value = value.dtype
    if value == pb.DTYPE_UNSPECIFIED:
        return "f32"
    try:
        return pb.DType.Name(value).removeprefix("DTYPE_").lower()
    except ValueError:
        return f"dtype {value}"


def problem(*shape, family="sgemm", math="ieee_fp32", version=None, layout="nn", dtype="f32",
            epilogue="none"):
    """A tuned.v1.Problem. `family`: a built-in family's name ("sgemm",
    "transpose": Problem.family, f32) or enum value, or any other name: a
    registered kernel spec's (Problem.family_name; the shape lists its dims
    in order), whose version is `version` (its hash, FamilyInfo.spec_hash;
    None: the newest).
    `math` (sgemm's math mode, tuner.proto Math): "ieee_fp32" (the default,
    fp32 kernels), "fp32_accurate" (also 3xTF32 tensor-core kernels within 2x
    cuBLAS fp32's error against fp64) or "tf32" (TF32 tensor cores within 2x
    cuBLAS TF32's), or an enum value.
    `layout` (sgemm's operand layouts, tuner.proto Layout): C(MxN) = op(A) @
    op(B), C row-major; "nn" (the default: A row-major MxK, B row-major KxN),
    "nt" (op(B) = B^T: B stored row-major NxK, as torch.nn.functional.linear's
    weight), "tn" (op(A) = A^T: A stored row-major KxM), "tt", or an enum
    value. Each layout is its own problem (its own measurements and best).
    `dtype` (Problem.dtype, tuner.proto DType; see dtype_value): "f32" (the
    default), or for sgemm "bf16" or "f16": A, B and C of that 16-bit type,
    alpha, beta and the accumulation fp32; or "bf16_f32" or "f16_f32": A
    and B of that 16-bit type, alpha, beta, the accumulation and C fp32 (C
    never rounded to 16 bits, as cublasGemmEx with an fp32 C); the 16-bit
    dtypes in math "ieee_fp32" only (the daemon refuses the other modes
    with INVALID_ARGUMENT); each its own problem too. A kernel spec's
    problem is "f32" only (its arguments have their own types).
    `epilogue` (tuner.proto Epilogue, EPILOGUES): what a 16-bit problem's
    kernel applies to C after the product, each its own problem: "none"
    (the default), "bias" (+ a bias of N elements of C's type, passed after
    C), "bias_relu", "bias_gelu_tanh" (GELU's tanh form) or "bias_gelu_erf"
    (GELU), or an enum value.
    TunedError INVALID_ARGUMENT for an empty family name, an unknown math
    mode, layout, dtype or epilogue, a version or a 16-bit dtype for a kernel spec's
    family (version: for a built-in family) or a non-integer dimension; the
    daemon checks the rest (whether the family exists, rank, range, whether
    the family tunes the mode and the dtype)."""
    if isinstance(math, str):
        try:
            math = pb.Math.Value("MATH_" + math.upper())
        except ValueError:
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT,
                             f"unknown math mode '{math}' (known: ieee_fp32, fp32_accurate, tf32)"
                             ) from None
    layout = layout_value(layout)
    dtype = dtype_value(dtype)
    epilogue = epilogue_value(epilogue)
    name = ""
    if isinstance(family, str):
        if not family:
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT, "the family name is empty")
        builtin = _builtin_family(family)
        family, name = (builtin, "") if builtin else (0, family)
    if version and not name:
        raise TunedError(grpc.StatusCode.INVALID_ARGUMENT,
                         f"version names a kernel spec's version; {family_name(family)} is a "
                         "built-in family")
    dims = []
    for d in shape:
        if isinstance(d, bool) or not hasattr(d, "__index__"):
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT, f"dimension {d!r} is not an integer")
        d = d.__index__()
        if not -(2**63) <= d < 2**63:
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT, f"dimension {d} does not fit 64 bits")
        dims.append(d)
    if name:
        if dtype != pb.DTYPE_F32:
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT,
                             f"dtype {dtype_name(dtype)} is for built-in families; the kernel "
                             f"spec {name}'s arguments have their own types")
        return pb.Problem(family_name=name, spec_hash=version or "", shape=dims, math=math,
                          layout=layout)
    return pb.Problem(family=family, dtype=dtype, shape=dims, math=math, layout=layout,
                      epilogue=epilogue)


# Other names of the built-in families (families/family.h Family::alias).
_ALIASES = {"gemm": "sgemm"}


def _builtin_family(name):
    """The enum value of a built-in family's lower-case name (or alias), else 0."""
    if name != name.lower():
        return 0
    name = _ALIASES.get(name, name)
    try:
        return pb.Family.Value("FAMILY_" + name.upper())
    except ValueError:
        return 0


def family_name(value):
    """"sgemm" for FAMILY_SGEMM, and so on; for a tuned.v1.Problem, its
    family's name (a kernel spec's family_name, or the built-in one's)."""
    if isinstance(value, pb.Problem):
        return value.family_name or family_name(value.family)
    try:
        return pb.Family.Name(value).removeprefix("FAMILY_").lower()
    except ValueError:
        return f"family {value}"


def spec_json(spec):
    """The JSON text of a kernel spec as RegisterFamilyRequest.json takes it.
    `spec`: the path of a .toml (read with tomllib) or .json file, or a dict
    with the spec file's keys (families/spec/spec.h, examples/kernels/). A
    `source_file` key is read, relative to the spec file's folder (the
    current directory for a dict), and sent inline as `source`.
    TunedError NOT_FOUND for a file that cannot be read, INVALID_ARGUMENT for
    a file that does not parse, another extension, a spec with both source
    and source_file, or a value JSON cannot hold; the daemon validates the rest."""
    if isinstance(spec, dict):
        data, base = dict(spec), os.getcwd()
    elif isinstance(spec, (str, os.PathLike)):
        path = os.fspath(spec)
        ext = os.path.splitext(path)[1].lower()
        if ext not in (".toml", ".json"):
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT,
                             f"{path}: a spec file is .toml or .json, not '{ext or 'no extension'}'")
        text = _read(path, "spec").decode("utf-8", errors="replace")
        if ext == ".toml" and tomllib is None:
            raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                             f"{path}: reading TOML needs Python 3.11 or the tomli package; "
                             "give a .json spec or a dict")
        try:
            data = tomllib.loads(text) if ext == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT, f"{path}: {e}") from None
        if not isinstance(data, dict):
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT, f"{path}: the spec is not a table")
        base = os.path.dirname(os.path.abspath(path))
    else:
        raise TypeError(f"spec must be a path or a dict, not {type(spec).__name__}")
    if "source_file" in data:
        if "source" in data:
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT,
                             "the spec has both source and source_file")
        source_file = data.pop("source_file")
        if not isinstance(source_file, str):
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT, "source_file must be a string")
        source_path = os.path.join(base, source_file)
        try:
            data["source"] = _read(source_path, "source").decode("utf-8")
        except UnicodeDecodeError as e:
            raise TunedError(grpc.StatusCode.INVALID_ARGUMENT,
                             f"source file {source_path} is not UTF-8 text (byte {e.start})") from None
    try:
        return json.dumps(data)
    except (TypeError, ValueError) as e:  # e.g. a TOML date
        raise TunedError(grpc.StatusCode.INVALID_ARGUMENT, f"the spec does not convert to JSON: {e}"
                         ) from None


class Client:
    """A connection to one daemon.

    address: "unix:/path/to.sock" or "host:port"; default: $TUNED_SERVER, else
    the local daemon's socket for GPU 0 (default_address()). A host:port
    address is always TLS, with the bearer token sent as
    "authorization: Bearer <token>". TLS files are PEM paths; each option
    defaults to its variable: TUNED_TLS_CA (default: the system's roots),
    TUNED_TLS_CERT and TUNED_TLS_KEY (mutual TLS), TUNED_TLS_SERVER_NAME (the
    name to check the certificate against), TUNED_TOKEN, else the first line
    of the file TUNED_TOKEN_FILE. Raises TunedError NOT_FOUND for a file that
    cannot be read, PERMISSION_DENIED for a token file or TLS key that others
    may read (check_secret_file); connects lazily.
    """

    def __init__(self, address=None, *, tls_ca=None, tls_cert=None, tls_key=None,
                 tls_server_name=None, token=None):
        env = os.environ.get
        self.address = address or default_address()
        if self.address.startswith("unix:"):
            self._channel = grpc.insecure_channel(self.address)
        else:
            tls_ca = tls_ca or env("TUNED_TLS_CA")
            tls_cert = tls_cert or env("TUNED_TLS_CERT")
            tls_key = tls_key or env("TUNED_TLS_KEY")
            tls_server_name = tls_server_name or env("TUNED_TLS_SERVER_NAME")
            token = token or env("TUNED_TOKEN")
            if not token and env("TUNED_TOKEN_FILE"):
                token = read_token_file(env("TUNED_TOKEN_FILE"))
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read(tls_ca, "--tls-ca") if tls_ca else None,
                private_key=_read(tls_key, "--tls-key", secret=True) if tls_key else None,
                certificate_chain=_read(tls_cert, "--tls-cert") if tls_cert else None)
            if token:
                creds = grpc.composite_channel_credentials(
                    creds, grpc.access_token_call_credentials(token))
            options = [("grpc.ssl_target_name_override", tls_server_name)] if tls_server_name else []
            self._channel = grpc.secure_channel(self.address, creds, options=options)
        self._stub = pb_grpc.TunerStub(self._channel)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, request, timeout=CALL_TIMEOUT_S):
        try:
            return method(request, timeout=timeout)
        except grpc.RpcError as e:
            raise self._error(e) from None

    def _error(self, e):
        code, message = e.code(), e.details() or ""
        if code == grpc.StatusCode.UNAVAILABLE:
            message = f"cannot reach tuned at {self.address} (is the daemon running?): {message}"
        elif code == grpc.StatusCode.UNIMPLEMENTED:
            message = (f"the daemon at {self.address} does not implement this call (it is older "
                       f"than this client)" + (f": {message}" if message else ""))
        return TunedError(code, message)

    def best(self, *shape, family="sgemm", tune_if_missing=False, basic=False, math="ieee_fp32",
             version=None, layout="nn", dtype="f32", epilogue="none"):
        """The tuned kernel (tuned.v1.BestKernel) for the shape: config, times,
        launch geometry for this very shape, entry, cubin and PTX (not with
        basic=True). An untuned shape gets the nearest tuned shape's kernel
        (match == MATCH_NEAREST); tune_if_missing also queues a sweep for it
        (queued_job_id). NOT_FOUND if no tuned shape is near. `family`,
        `math`, `version`, `layout`, `dtype`, `epilogue`: as in problem() (sgemm in
        layout "nt": a kernel reading B as stored NxK; in dtype "bf16": one
        taking __nv_bfloat16 A, B and C, best.arguments; in "bf16_f32":
        __nv_bfloat16 A and B and a float C); a kernel spec's
        best also has kernel_arguments (tuned.Kernel.launch runs it)."""
        req = pb.GetBestRequest(problem=problem(*shape, family=family, math=math, version=version,
                                                layout=layout, dtype=dtype, epilogue=epilogue),
                                tune_if_missing=tune_if_missing,
                                view=pb.BEST_VIEW_BASIC if basic else pb.BEST_VIEW_FULL)
        return self._call(self._stub.GetBest, req)

    def sweep(self, *shape, family="sgemm", wait=True, progress=None, math="ieee_fp32",
              version=None, layout="nn", strategy="", budget="", dtype="f32", epilogue="none"):
        """Queues a sweep of the family's space for the shape; returns the
        tuned.v1.Job, once it ended if `wait`. progress (with wait): None
        shows a tqdm bar on a terminal and plain lines otherwise (stderr),
        False nothing, or a callable taking each Job update. `family`, `math`,
        `version`, `layout`, `dtype`, `epilogue`: as in problem(). `strategy`: "model" or
        "exhaustive" ("": the daemon's default); `budget`: GPU time of
        measuring ("10s", "2m") or a number of configs ("64"); "": the
        daemon's default."""
        job = self._call(self._stub.SubmitSweep, pb.SubmitSweepRequest(
            problem=problem(*shape, family=family, math=math, version=version, layout=layout,
                            dtype=dtype, epilogue=epilogue),
            strategy=strategy or "", budget=str(budget) if budget else ""))
        return self.watch(job.id, progress) if wait else job

    def watch(self, job_id, progress=None):
        """Follows a job until it ends (DONE, FAILED or CANCELLED); returns its
        last state. `progress` as in sweep()."""
        show = _Progress(progress) if progress is not False else None
        last = None
        try:
            while last is None or last.state not in _ENDED:
                # The daemon ends a watch after 10 minutes: watch again.
                any_event = False
                try:
                    for event in self._stub.WatchJob(pb.GetJobRequest(id=job_id)):
                        last, any_event = event.job, True
                        if show:
                            show(last)
                except grpc.RpcError as e:
                    raise self._error(e) from None
                if not any_event:
                    raise TunedError(grpc.StatusCode.INTERNAL,
                                     "the daemon ended a watch without sending the job")
        finally:
            if show:
                show.close()
        return last

    def job(self, job_id):
        """One job's state and progress (tuned.v1.Job); NOT_FOUND for an unknown id."""
        return self._call(self._stub.GetJob, pb.GetJobRequest(id=job_id))

    def cancel(self, job_id):
        """Cancels a queued or running job; returns it."""
        return self._call(self._stub.CancelJob, pb.CancelJobRequest(id=job_id))

    def jobs(self, limit=0):
        """Jobs, newest first (list of tuned.v1.Job); limit 0 = the daemon's default (50)."""
        return list(self._call(self._stub.ListJobs, pb.ListJobsRequest(limit=limit)).jobs)

    def results(self, *shape, family="sgemm", top=0, math="ieee_fp32", version=None, layout="nn",
                dtype="f32", epilogue="none"):
        """The stored measurements of the problem, best first (list of
        tuned.v1.Measurement; error: against the fp64 reference outside
        ieee_fp32 and for a 16-bit dtype); top 0 = all. `family`, `math`,
        `version`, `layout`, `dtype`: as in problem()."""
        req = pb.ListMeasurementsRequest(
            problem=problem(*shape, family=family, math=math, version=version, layout=layout,
                            dtype=dtype, epilogue=epilogue),
            top=top)
        return list(self._call(self._stub.ListMeasurements, req).measurements)

    def device(self):
        """The daemon's GPU (tuned.v1.Device)."""
        return self._call(self._stub.DescribeDevice, pb.DescribeDeviceRequest())

    def daemons(self, all=False):
        """The daemons sharing the daemon's database (a fleet; list of
        tuned.v1.Daemon: host, GPU, kind, heartbeat age in seconds, current
        job, claims held); live ones unless `all`."""
        return list(self._call(self._stub.ListDaemons, pb.ListDaemonsRequest(all=all)).daemons)

    def tuned(self, family=None):
        """Problems with a tuned kernel on the daemon's device (list of
        tuned.v1.Problem), of every family or of `family` (a name, as in problem())."""
        p = problem(family=family) if family else pb.Problem()
        req = pb.ListTunedRequest(family=p.family)
        problems = list(self._call(self._stub.ListTuned, req).problems)
        if p.family_name:
            problems = [q for q in problems if q.family_name == p.family_name]
        return problems

    def register_family(self, spec):
        """Registers a kernel spec as a family; returns its tuned.v1.FamilyInfo
        (spec_hash, space_size; created False when this very version was
        registered before). `spec`: a .toml or .json file's path, or a dict
        (sent as JSON, see spec_json), or a tuned.v1.KernelSpec.
        TunedError INVALID_ARGUMENT naming the field for a bad spec,
        FAILED_PRECONDITION unless the daemon allows user kernels
        (tuned --allow-user-kernels), ALREADY_EXISTS for a built-in name."""
        if isinstance(spec, pb.KernelSpec):
            req = pb.RegisterFamilyRequest(spec=spec)
        else:
            req = pb.RegisterFamilyRequest(json=spec_json(spec))
        # The daemon compiles a config of the spec before it answers.
        return self._call(self._stub.RegisterFamily, req, timeout=REGISTER_TIMEOUT_S)

    def families(self):
        """The families (list of tuned.v1.FamilyInfo): the built-in ones, then
        the newest version of each kernel spec by name."""
        return list(self._call(self._stub.ListFamilies, pb.ListFamiliesRequest()).families)

    def family(self, name, version=None):
        """One family (tuned.v1.FamilyInfo) with its spec; `version` (its
        hash) None: the newest. NOT_FOUND for an unknown name or version."""
        return self._call(self._stub.GetFamily,
                          pb.GetFamilyRequest(name=name, spec_hash=version or ""))

    def import_kernel(self, best):
        """Stores a kernel (tuned.v1.BestKernel) exported from a daemon on the
        same device kind as a finished job; returns the job."""
        return self._call(self._stub.ImportKernel, pb.ImportKernelRequest(kernel=best))


def _describe(job):
    shape = "x".join(str(d) for d in job.problem.shape)
    layout = f" {layout_name(job.problem)}" if job.problem.layout != pb.LAYOUT_NN else ""
    dtype = dtype_name(job.problem)
    dtype = f" {dtype}" if dtype != "f32" else ""
    return f"job {job.id} {family_name(job.problem)}{dtype} {shape}{layout}"


def _best_text(job):
    if not job.HasField("best"):
        return "best -"
    b = job.best
    return f"best {b.median_ms:.4f} ms ({b.metric:.1f} {b.metric_unit})"


class _Progress:
    """Shows Job updates: a tqdm bar on a terminal (stderr), else one plain
    line per 10% of progress and per state change; or calls a callable."""

    def __init__(self, progress):
        self._fn = progress if callable(progress) else None
        self._bar = None
        self._tty = False
        if self._fn is None:
            try:
                import tqdm  # noqa: F401
                self._tty = sys.stderr.isatty()
            except ImportError:
                pass
        self._last = (-1, None)

    def __call__(self, job):
        if self._fn:
            self._fn(job)
            return
        finished = job.done + job.failed
        state = pb.JobState.Name(job.state).removeprefix("JOB_").lower()
        if self._tty:
            import tqdm
            if self._bar is None:
                self._bar = tqdm.tqdm(total=job.total, desc=_describe(job), unit="config",
                                      file=sys.stderr)
            self._bar.total = job.total
            self._bar.n = finished
            self._bar.set_postfix_str(f"{job.failed} failed, {_best_text(job)}, {state}")
            return
        pct = 100 * finished // job.total if job.total > 0 else 0
        if (pct // 10, job.state) == self._last:
            return
        self._last = (pct // 10, job.state)
        print(f"{_describe(job)} {state}: {job.done}/{job.total} done, {job.failed} failed, "
              f"{max(0, job.total - finished)} left, {_best_text(job)}", file=sys.stderr, flush=True)

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None
