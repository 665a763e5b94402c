"""The stand-in GPU of the docs' Python blocks (tests/docs_test.py runs each
block after `import docs_stand_in`): torch's "cuda" device is the CPU, and
the CUDA driver that tuned.driver calls is cuda_fake.Emulator, which runs an
sgemm launch on the CPU. So a block runs as written, against the real
(compile-only) daemon, on a machine without a GPU or a CUDA build of torch:
tensors made with device="cuda" (or moved there with .cuda() or .to()) are
CPU tensors, and tuned.matmul / tuned.linear take them as a GPU's."""

import functools

import torch

import cuda_fake
import tuned.driver
import tuned.ops


def _on_cpu(device):
    """"cpu" for a CUDA device (a string, torch.device or ordinal), else `device`."""
    if isinstance(device, int) or (device is not None and torch.device(device).type == "cuda"):
        return "cpu"
    return device


def _factory(fn):
    @functools.wraps(fn)
    def made_on_cpu(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = _on_cpu(kwargs["device"])
        return fn(*args, **kwargs)
    return made_on_cpu


for _name in ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "tensor", "arange",
              "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like", "full_like"):
    setattr(torch, _name, _factory(getattr(torch, _name)))

_to = torch.Tensor.to


def _tensor_to(self, *args, **kwargs):
    args = tuple(_on_cpu(a) if isinstance(a, (str, torch.device)) else a for a in args)
    if "device" in kwargs:
        kwargs["device"] = _on_cpu(kwargs["device"])
    return _to(self, *args, **kwargs)


torch.Tensor.to = _tensor_to
torch.Tensor.cuda = lambda self, *args, **kwargs: self
torch.nn.Module.cuda = lambda self, *args, **kwargs: self

# tuned's side: the CPU counts as the GPU, and kernels run on the Emulator.
tuned.ops._DEVICE_TYPE = "cpu"
tuned.ops._new_kernel = lambda best, device: cuda_fake.on_cpu(tuned.Kernel(best, device="cuda:0"))
_driver = cuda_fake.Emulator()
tuned.driver.libcuda = lambda: _driver
tuned.driver.stream_function = lambda torch_: (lambda index: 0)
# A CPU tensor's device has no index (tuned.ops names it -1): the daemon of GPU 0 answers.
_client = tuned.ops._client
tuned.ops._client = lambda index: _client(max(index, 0))
