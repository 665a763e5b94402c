"""tuned.Kernel's TMA tensor maps without a GPU, through the stand-in driver
(cuda_fake.FakeDriver): encoded over the pointers they name (cached per
pointer set), of their dtype, 128 zero bytes where TMA cannot take the
operand, staged (copied into 16-byte rows) where the map asks, and refused
when malformed."""

import ctypes

import grpc
import pytest

import tuned
from tuned import pb

torch = pytest.importorskip("torch", reason="torch is not installed")
import cuda_fake  # noqa: E402 (needs torch)
from kernel_fakes import (OUT_DTYPE, best16, best_kernel, driver, launch_sgemm,  # noqa: E402,F401
                          no_cuda, with_a_map)


def test_a_tensor_map_is_encoded_and_passed_after_the_arguments(driver):
    """A 16-byte aligned base with 16-byte strides: cuTensorMapEncodeTiled
    over the named parameter's pointer into a 64-byte aligned map, which the
    9th parameter points at (the kernel takes it by value)."""
    driver.params = 9
    launch_sgemm(with_a_map(), a=0x1000)
    (encode,) = driver.encodes
    assert encode == {"out": encode["out"], "dtype": 7, "rank": 2, "base": 0x1000,
                      "dims": [16, 64], "strides": [64], "box": [32, 64], "elem_strides": [1, 1],
                      "interleave": 0, "swizzle": 3, "l2": 3, "oob": 0}
    assert encode["out"] % 64 == 0
    (launch,) = driver.launches
    assert launch["params"][8] == encode["out"]
    assert launch["bytes"][8] == b"\xa5" * 128  # what the encode wrote
    assert ctypes.c_void_p.from_buffer_copy(launch["bytes"][4]).value == 0x1000  # A as before


def test_tensor_maps_are_cached_by_pointer(driver):
    """One encode per A pointer: a launch over a pointer seen before passes
    the map encoded then."""
    driver.params = 9
    kernel = with_a_map()
    for a in (0x1000, 0x2000, 0x1000, 0x2000):
        launch_sgemm(kernel, a=a)
    assert [e["base"] for e in driver.encodes] == [0x1000, 0x2000]
    maps = [launch["params"][8] for launch in driver.launches]
    assert maps[0] == maps[2] and maps[1] == maps[3] and maps[0] != maps[1]


@pytest.mark.parametrize("swizzle_bytes, enum", [(0, 0), (32, 1), (64, 2)])
def test_the_swizzle_bytes_name_the_drivers_enum(driver, swizzle_bytes, enum):
    driver.params = 9
    launch_sgemm(with_a_map(swizzle_bytes=swizzle_bytes))
    assert [e["swizzle"] for e in driver.encodes] == [enum]


@pytest.mark.parametrize("l2_promotion_bytes, enum", [(0, 3), (64, 1), (128, 2), (256, 3)])
def test_the_l2_promotion_bytes_name_the_drivers_enum(driver, l2_promotion_bytes, enum):
    driver.params = 9
    launch_sgemm(with_a_map(l2_promotion_bytes=l2_promotion_bytes))
    assert [e["l2"] for e in driver.encodes] == [enum]


@pytest.mark.parametrize("a, k", [(0x1004, 16),   # A not 16-byte aligned
                                  (0x1000, 9)])   # a row of A is 36 bytes
def test_without_tmas_alignment_the_map_is_128_zero_bytes(driver, a, k):
    driver.params = 9
    launch_sgemm(with_a_map(k=k), a=a)
    assert driver.encodes == []
    (launch,) = driver.launches
    assert launch["params"][8] % 64 == 0
    assert launch["bytes"][8] == bytes(128)


def test_a_staged_operand_is_copied_with_16_byte_rows_and_read_through_its_map(driver):
    """TensorMap.stage over a pitch TMA cannot take (rows of 9 floats, 36
    bytes): the operand copied into a workspace from the device's staging
    pool with rows of 48 bytes, their last 12 bytes zeroed, the map encoded
    over the copy, the kernel launched with the copy in A's parameter, the
    workspace freed after it on the same stream. Each launch copies anew
    (nothing cached), and an operand TMA takes is not staged (A's parameter
    the caller's again)."""
    driver.params = 9
    kernel = with_a_map(k=9, stage=True)
    launch_sgemm(kernel, a=0x1000)
    staging = [c for c in driver.calls if c[0] in ("pool", "pool attribute", "alloc", "copy 2d",
                                                   "memset 2d", "launch", "free")]
    assert staging[:2] == [("pool", 1, 1, 0), ("pool attribute", cuda_fake.POOL, 4, 2**64 - 1)]
    assert driver.allocs == [(cuda_fake.STAGED, 48 * 64, cuda_fake.POOL, 0)]
    assert driver.copies == [{"src": 0x1000, "src_pitch": 36, "dst": cuda_fake.STAGED,
                              "dst_pitch": 48, "width": 36, "height": 64, "types": (2, 2),
                              "stream": 0}]
    (encode,) = driver.encodes
    assert (encode["base"], encode["dims"], encode["strides"]) == (cuda_fake.STAGED, [9, 64], [48])
    assert driver.pad_zeros == [(cuda_fake.STAGED + 36, 48, 0, 12, 64, 0)]
    (launch,) = driver.launches
    assert launch["params"][8] == encode["out"]
    assert ctypes.c_void_p.from_buffer_copy(launch["bytes"][4]).value == cuda_fake.STAGED
    assert [c[0] for c in staging][2:] == ["alloc", "copy 2d", "memset 2d", "launch", "free"]
    assert staging[-1] == ("free", cuda_fake.STAGED, 0)
    launch_sgemm(kernel, a=0x1000)
    assert len(driver.copies) == 2 and len(driver.encodes) == 2
    assert [c[0] for c in driver.calls].count("pool") == 1  # created once
    aligned = with_a_map(k=16, stage=True)
    launch_sgemm(aligned, a=0x2000)
    assert len(driver.copies) == 2 and driver.encodes[-1]["base"] == 0x2000
    assert ctypes.c_void_p.from_buffer_copy(driver.launches[-1]["bytes"][4]).value == 0x2000


def test_a_staged_map_has_rank_2(driver):
    with pytest.raises(tuned.TunedError, match="malformed tensor map: a staged map has rank 2"):
        launch_sgemm(with_a_map(stage=True, dims=[16, 64, 1], strides_bytes=[64, 4096],
                                box=[32, 64, 1]))
    assert driver.launches == []


def test_a_failing_encode_is_named_and_launches_nothing(driver):
    driver.encode_result = 1
    with pytest.raises(tuned.TunedError) as e:
        launch_sgemm(with_a_map())
    assert e.value.code == grpc.StatusCode.INTERNAL
    assert e.value.message == "cuTensorMapEncodeTiled: CUDA_ERROR_INVALID_VALUE"
    assert len(driver.encodes) == 1 and driver.launches == []


@pytest.mark.parametrize("fields", [dict(pointer_arg=0),       # M, an int
                                    dict(pointer_arg=8),       # no such parameter
                                    dict(param=9),             # not the parameter after C
                                    dict(strides_bytes=[]),    # rank 2 needs 1 stride
                                    dict(box=[32]),
                                    dict(swizzle_bytes=16),
                                    dict(l2_promotion_bytes=32)])
def test_a_malformed_tensor_map_is_refused(driver, fields):
    with pytest.raises(tuned.TunedError, match="malformed tensor map") as e:
        launch_sgemm(with_a_map(**fields))
    assert e.value.code == grpc.StatusCode.INTERNAL
    assert driver.encodes == [] and driver.launches == []


@pytest.mark.parametrize("map_dtype, enum", [(None, 7), (pb.DTYPE_F32, 7), (pb.DTYPE_BF16, 9),
                                             (pb.DTYPE_F16, 6)])
def test_a_tensor_maps_data_type_is_its_dtypes(driver, map_dtype, enum):
    """TensorMap.dtype names cuTensorMapEncodeTiled's CUtensorMapDataType:
    unset and F32 FLOAT32 (7), BF16 BFLOAT16 (9), F16 FLOAT16 (6); the
    dims, strides (bytes) and box as the map gives them."""
    driver.params = 9
    half = map_dtype in (pb.DTYPE_BF16, pb.DTYPE_F16)
    best = best16("bf16" if map_dtype == pb.DTYPE_BF16 else "f16", shape=(64, 32, 16)) if half \
        else best_kernel()
    fields = dict(pointer_arg=4, dims=[16, 64], strides_bytes=[(2 if half else 4) * 16],
                  box=[64 if half else 32, 64], swizzle_bytes=128, param=8)
    if map_dtype is not None:
        fields["dtype"] = map_dtype
    best.geometry.tensor_maps.add(**fields)
    launch_sgemm(tuned.Kernel(best, device="cuda:0"), a=0x1000)
    (encode,) = driver.encodes
    assert encode["dtype"] == enum
    assert (encode["dims"], encode["strides"], encode["box"]) == (
        [16, 64], [32 if half else 64], [64 if half else 32, 64])
    assert driver.launches[0]["bytes"][8] == b"\xa5" * 128


@pytest.mark.parametrize("dtype, c_type, c_box, c_bytes", [("bf16", 9, [64, 64], 2),
                                                         ("f16", 6, [64, 64], 2),
                                                         ("bf16_f32", 7, [32, 64], 4),
                                                         ("f16_f32", 7, [32, 64], 4)])
def test_a_16bit_wgmma_kernels_three_maps_are_encoded_each_in_its_dtype(driver, dtype, c_type,
                                                                         c_box, c_bytes):
    """A 16-bit wgmma kernel's geometry, as the daemon's (gemm16_tc.cc): maps
    over A (parameter 8), B (9) and C (pointer argument 7, parameter 10),
    A's and B's of the inputs' type, C's of C's (f32 for bf16_f32 and
    f16_f32: 32 elements a 128-byte box row, a row pitch of 4 N bytes):
    three encodes over the three pointers, each of its CUtensorMapDataType,
    passed after the 8 arguments in order."""
    driver.params = 11
    in_type = 9 if dtype.startswith("bf16") else 6
    best = best16(dtype, shape=(64, 32, 16))
    for arg, param, dims, box, size, map_dtype in (
            (4, 8, [16, 64], [64, 64], 2, dtype.removesuffix("_f32")),
            (5, 9, [32, 16], [64, 64], 2, dtype.removesuffix("_f32")),
            (7, 10, [32, 64], c_box, c_bytes, "f32" if dtype in OUT_DTYPE else dtype)):
        best.geometry.tensor_maps.add(pointer_arg=arg, dims=dims, strides_bytes=[dims[0] * size],
                                      box=box, swizzle_bytes=128, param=param,
                                      dtype=pb.DType.Value("DTYPE_" + map_dtype.upper()))
    kernel = tuned.Kernel(best, device="cuda:0")
    launch_sgemm(kernel, a=0x1000)
    assert [(e["base"], e["dtype"], e["dims"], e["strides"], e["box"]) for e in driver.encodes] == [
        (0x1000, in_type, [16, 64], [32], [64, 64]), (0x2000, in_type, [32, 16], [64], [64, 64]),
        (0x3000, c_type, [32, 64], [32 * c_bytes], c_box)]
    (launch,) = driver.launches
    assert launch["params"][8:] == [e["out"] for e in driver.encodes]
    assert launch["bytes"][8:] == [b"\xa5" * 128] * 3
    assert cuda_fake.sgemm_pointers(launch) == (0x1000, 0x2000, 0x3000)
    launch_sgemm(kernel, a=0x1000)  # the same pointers: the maps encoded then
    assert len(driver.encodes) == 3 and driver.launches[1]["params"][8:] == launch["params"][8:]


def test_a_tensor_map_of_an_unknown_dtype_is_malformed(driver):
    with pytest.raises(tuned.TunedError, match="malformed tensor map") as e:
        launch_sgemm(with_a_map(dtype=9))
    assert e.value.code == grpc.StatusCode.INTERNAL
    assert driver.encodes == [] and driver.launches == []


def test_the_plan_gives_its_maps_in_the_drivers_enums(driver):
    """The launcher's plan of a kernel (what tuned._torchcall's served-kernel
    table takes, serving.py): each map's pointer parameter, its
    CUtensorMapDataType, dims, strides, box, CUtensorMapSwizzle,
    CUtensorMapL2promotion (0 bytes: 256) and whether it stages."""
    kernel = with_a_map(k=9, stage=True, swizzle_bytes=64, dtype=pb.DTYPE_F32)
    launcher = kernel._prepare()
    assert tuned.driver.fastcall.plan_maps(launcher.plan) == [
        (4, 7, [9, 64], [36], [32, 64], 2, 3, True)]
