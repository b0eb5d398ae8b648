"""The typed face of Tensor's installed methods (coretorch/_tensor_api.pyi) matches what coretorch installs."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)


def test_tensor_api_stub_is_up_to_date():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_tensor_api.py"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr + r.stdout


def test_tensor_methods_are_declared_for_type_checkers():
    text = open(os.path.join(ROOT, "coretorch", "_tensor_api.pyi")).read()
    for name in ("reshape", "to", "sum", "softmax", "__add__", "__matmul__", "tril", "topk"):
        assert f"    def {name}(" in text, name


# A user's program: it must type-check against coretorch's annotations (py.typed, _tensor_api.pyi), see coretorch's
# own types where they are declared (each reveal_type's comment), and get an error for a misspelled method (where
# everything was Any, it would pass silently).
USER_PROGRAM = '''\
import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch import Tensor


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(self.fc(x))


def step(model: nn.Module, opt: torch.optim.Optimizer, x: Tensor, y: Tensor) -> float:
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.zeros(8, 2)
print(step(model, opt, x, y))
reveal_type(x)  # "coretorch.tensor.Tensor"
reveal_type(x.reshape(2, -1))  # "coretorch.tensor.Tensor"
reveal_type(x * 2 + y)  # "coretorch.tensor.Tensor"
reveal_type(x.sum(dim=0))  # "coretorch.tensor.Tensor"
reveal_type(F.mse_loss(x, y))  # "coretorch.tensor.Tensor"
reveal_type(torch.exp(x))  # "coretorch.tensor.Tensor"
reveal_type(x.shape)  # "coretorch.tensor.Size"
reveal_type(x.dtype)  # "coretorch.dtypes.dtype"
reveal_type(torch.cat([x, y]))  # "coretorch.tensor.Tensor"
reveal_type(torch.is_tensor(x))  # "bool"
x.no_such_method()  # error: "Tensor" has no attribute "no_such_method"  [attr-defined]
'''


def test_user_code_type_checks_against_coretorch(tmp_path):
    (tmp_path / "user.py").write_text(USER_PROGRAM)
    expected = []
    for i, line in enumerate(USER_PROGRAM.splitlines(), 1):
        if line.startswith("reveal_type("):
            expected.append(f"user.py:{i}: note: Revealed type is {line.split('  # ')[1]}")
        elif "  # error: " in line:
            expected.append(f"user.py:{i}: {line.split('  # ')[1]}")
    # coretorch from this checkout: mypy cannot see through an editable install's import hook.  Its modules are
    # followed silently, as an installed package's are (their own errors are `mypy coretorch`'s business).
    env = dict(os.environ, MYPYPATH=os.path.abspath(ROOT))
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                        "--no-error-summary", "user.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.stdout.splitlines() == expected, r.stdout + r.stderr
    assert r.returncode == 1  # the one error
