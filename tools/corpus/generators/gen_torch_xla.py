"""PyTorch/XLA programs (torch_xla 2.9, PJRT_DEVICE=CPU), for dumps.

Each program builds its graph lazily on the XLA device and is cut and compiled by
``torch_xla.sync()`` (``xm.mark_step()`` before 2.6); XLA names the modules
``SyncTensorsGraph.N``. Programs: an MLP's forward, backward and SGD step (torch.optim.SGD),
run twice (the second step compiles a new graph: the optimizer state exists now), and a small
conv net (conv2d + relu + max_pool2d + linear) forward and backward. Every step is in try/except
(``FAILED <step>``).

Usage:
  PJRT_DEVICE=CPU XLA_FLAGS=--xla_dump_to=DIR python gen_torch_xla.py [open]
"""
import os
import sys
import traceback

os.environ.setdefault("PJRT_DEVICE", "CPU")

import torch  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402


def fail(step, e):
    msg = str(e).splitlines()[0][:300] if str(e) else ""
    print(f"FAILED {step}: {type(e).__name__}: {msg}", flush=True)


def sync():
    if hasattr(torch_xla, "sync"):
        torch_xla.sync()
    else:
        xm.mark_step()


def device():
    return torch_xla.device() if hasattr(torch_xla, "device") else xm.xla_device()


def mlp_sgd(dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(16, 32).to(dev)
    y = torch.randint(0, 10, (16,)).to(dev)
    for step in range(2):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sync()
        print("ok mlp_sgd step", step, float(loss.cpu()), flush=True)


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc(x.flatten(1))


def conv_fwd_bwd(dev):
    torch.manual_seed(1)
    net = ConvNet().to(dev)
    x = torch.randn(2, 3, 16, 16).to(dev)
    out = net(x)
    loss = out.square().mean()
    loss.backward()
    sync()
    print("ok conv_fwd_bwd", float(loss.cpu()), tuple(net.conv.weight.grad.shape), flush=True)


def main():
    print("torch", torch.__version__, "torch_xla", torch_xla.__version__, flush=True)
    dev = device()
    for name, f in (("mlp_sgd", mlp_sgd), ("conv_fwd_bwd", conv_fwd_bwd)):
        try:
            f(dev)
        except Exception as e:  # noqa: BLE001
            fail(name, e)
            traceback.print_exc()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001
        fail("main", e)
        traceback.print_exc()
    sys.exit(0)
