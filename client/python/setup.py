"""Builds the `tuned` package, generating its gRPC stubs at build time.

The stubs (tuned/v1/tuner_pb2.py, tuner_pb2_grpc.py) come from
proto/tuned/v1/tuner.proto, so they always match the daemon of this checkout.
They are written into the build directory, never the source tree, by the
first of:
  1. $TUNED_PYTHON_STUBS: a directory holding tuned/v1/*_pb2*.py generated
     elsewhere (for a machine without protoc, e.g. the GPU machine);
  2. protoc with grpc_python_plugin (Debian: protobuf-compiler,
     protobuf-compiler-grpc; the C++ build needs them too);
  3. grpc_tools.protoc (the grpcio-tools package), if importable.
The proto is found at $TUNED_PROTO_DIR (the directory holding tuned/v1/),
else ../../proto of this file; the C launcher of the extension
tuned._fastcall at $TUNED_CORE_DIR, else ../../core.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PROTO = "tuned/v1/tuner.proto"
STUBS = ("tuned/v1/tuner_pb2.py", "tuned/v1/tuner_pb2_grpc.py")


def generate_stubs(out: Path) -> str:
    """Writes the stubs under `out`; returns how. Raises RuntimeError if it cannot."""
    prebuilt = os.environ.get("TUNED_PYTHON_STUBS")
    if prebuilt:
        for stub in STUBS:
            src = Path(prebuilt) / stub
            if not src.is_file():
                raise RuntimeError(f"TUNED_PYTHON_STUBS: no {src}")
            (out / stub).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out / stub)
        return f"copied from {prebuilt}"
    proto_dir = Path(os.environ.get("TUNED_PROTO_DIR", HERE.parent.parent / "proto"))
    if not (proto_dir / PROTO).is_file():
        raise RuntimeError(f"no {proto_dir / PROTO}: set TUNED_PROTO_DIR or TUNED_PYTHON_STUBS")
    args = [f"--proto_path={proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}", PROTO]
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if protoc and plugin:
        cmd = [protoc, f"--plugin=protoc-gen-grpc_python={plugin}"] + args
        how = f"{protoc} + {plugin}"
    else:
        try:
            import grpc_tools  # noqa: F401
        except ImportError:
            raise RuntimeError(
                "cannot generate the gRPC stubs: install protoc and grpc_python_plugin "
                "(Debian: protobuf-compiler protobuf-compiler-grpc) or grpcio-tools, "
                "or point TUNED_PYTHON_STUBS at stubs generated elsewhere") from None
        cmd = [sys.executable, "-m", "grpc_tools.protoc"] + args
        how = "grpc_tools.protoc"
    subprocess.run(cmd, check=True, cwd=proto_dir)
    return how


class BuildPyWithStubs(build_py):
    """build_py, then the stubs into the build's tuned/v1/."""

    def run(self):
        super().run()
        how = generate_stubs(Path(self.build_lib).resolve())
        print(f"tuned: gRPC stubs for {PROTO}: {how}")


# The launcher in C that the C++ client library calls too (core/launch_c.c,
# core/include/tuned/launch_c.h), found at $TUNED_CORE_DIR, else ../../core
# of this file, and compiled into tuned._fastcall.
CORE = Path(os.environ.get("TUNED_CORE_DIR", HERE.parent.parent / "core")).resolve()

# tuned._fastcall: the launches in C (tuned/_fastcall.c on the launcher;
# libcuda and cuBLAS are opened at run time, so no CUDA header or library is
# needed to build). Optional: without a C compiler or Python's headers
# (Debian: python3-dev), or without the launcher's sources, the package
# installs without it and launches through ctypes and torch.
FASTCALL = Extension("tuned._fastcall", ["tuned/_fastcall.c"], depends=["tuned/_fastcall_api.h"],
                     libraries=["dl", "pthread"],
                     extra_compile_args=["-O2", "-Wall", "-Werror"], optional=True)


class BuildExtWithLauncher(build_ext):
    """build_ext, with the C launcher's source and header copied from CORE
    into the build directory, compiled into tuned._fastcall, its header
    seen by both extensions (setup()'s arguments take no path outside this
    directory)."""

    def run(self):
        launcher = Path(self.build_temp).resolve() / "launcher"
        if (CORE / "launch_c.c").is_file():
            (launcher / "tuned").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(CORE / "launch_c.c", launcher / "launch_c.c")
            shutil.copyfile(CORE / "include/tuned/launch_c.h", launcher / "tuned/launch_c.h")
            FASTCALL.sources.append(str(launcher / "launch_c.c"))
            for ext in self.extensions:  # tuned/_fastcall_api.h includes tuned/launch_c.h
                ext.include_dirs.append(str(launcher))
        else:  # the optional extension then fails to build, and the package installs without it
            print(f"tuned: no C launcher at {CORE} (set TUNED_CORE_DIR): tuned._fastcall not built")
        super().run()



def torchcall():
    """tuned._torchcall (tuned/_torchcall.cpp, tuned/_serving*.cpp): a
    served-cuBLAS call that allocates its result with at::empty, Kernel.sgemm's
    checks and launch, and serving at torch's dispatcher (the operators
    tuned::linear and tuned::mm, the served-kernel table, tuned.enable()'s
    kernels of aten::mm, addmm and linear), in C++; built against the torch
    of this environment where torch is importable here (pip install
    --no-build-isolation), as torch.utils.cpp_extension.CppExtension builds
    one, with torch's CUDA streams and kernels where that torch has CUDA (and
    the toolkit's headers are found: $CUDA_HOME, else /usr/local/cuda); []
    where torch is not importable (tuned/blas.py and tuned/kernel.py then do
    that from Python, and tuned.optimize and tuned.enable serve from Python).
    Optional: a failed build leaves the package without it."""
    try:
        import torch
        from torch.utils import cpp_extension
        abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
        includes, libs = cpp_extension.include_paths(), cpp_extension.library_paths()
    except Exception:  # no torch, or a broken one: the package needs neither to build
        return []
    macros = [("_GLIBCXX_USE_CXX11_ABI", str(abi))]
    libraries = ["c10", "torch", "torch_cpu", "torch_python"]
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if torch.version.cuda and Path(cuda_home, "include", "cuda_runtime_api.h").is_file():
        includes = includes + [str(Path(cuda_home, "include"))]
        macros.append(("TUNED_TORCH_CUDA", "1"))
        libraries += ["c10_cuda", "torch_cuda"]
    return [Extension("tuned._torchcall", ["tuned/_torchcall.cpp", "tuned/_serving.cpp",
                                              "tuned/_serving_table.cpp"],
                      language="c++", depends=["tuned/_fastcall_api.h", "tuned/_serving.h"],
                      include_dirs=includes, library_dirs=libs, runtime_library_dirs=libs,
                      libraries=libraries, define_macros=macros,
                      extra_compile_args=["-O2", "-std=c++20", "-Wall"], optional=True)]


setup(packages=["tuned", "tuned.v1"], ext_modules=[FASTCALL] + torchcall(),
      cmdclass={"build_py": BuildPyWithStubs, "build_ext": BuildExtWithLauncher})
