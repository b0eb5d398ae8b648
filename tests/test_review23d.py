"""Review 23d (eager): the nn.Module API and the containers, second pass — buffer registration and persistence,
attribute replacement rules, the registration name checks, Flatten/Unflatten arguments, parametrize and the module
hooks — each against PyTorch 2.13's behaviour (its ``torch/nn/modules/module.py`` is the spec)."""
import pytest

import coretorch as torch
from coretorch import nn


# ---- buffers ---------------------------------------------------------------------------------------------------
def test_register_buffer_takes_its_persistent_argument_not_the_buffer_s(device):
    """PyTorch: ``register_buffer(name, t, persistent=True)`` decides persistence from its argument alone; an
    ``nn.Buffer``'s own ``persistent`` counts only when the Buffer is assigned as an attribute. Before: the
    Buffer's flag overrode the argument, so ``register_buffer("x", nn.Buffer(t, persistent=False))`` silently
    left ``x`` out of state_dict (and ``persistent=False`` with a default Buffer put it in)."""
    m = nn.Module()
    m.register_buffer("x", nn.Buffer(torch.zeros(2, device=device), persistent=False))
    assert list(m.state_dict()) == ["x"]
    assert m._non_persistent_buffers_set == set()
    m.register_buffer("y", nn.Buffer(torch.zeros(1, device=device)), persistent=False)
    assert list(m.state_dict()) == ["x"]
    assert m._non_persistent_buffers_set == {"y"}
    m.z = nn.Buffer(torch.zeros(1, device=device), persistent=False)  # attribute assignment: the Buffer's flag
    assert list(m.state_dict()) == ["x"]
    assert m._non_persistent_buffers_set == {"y", "z"}


def test_assigning_a_buffer_over_a_plain_attribute_raises_key_error():
    """PyTorch: ``m.p = nn.Buffer(t)`` where ``p`` is a plain attribute goes to register_buffer, which refuses
    the existing name (KeyError "attribute 'p' already exists") and leaves the attribute. Before: the plain
    attribute was silently deleted and replaced by a buffer."""
    m = nn.Module()
    m.p = 1
    with pytest.raises(KeyError, match="attribute 'p' already exists"):
        m.p = nn.Buffer(torch.zeros(1))
    assert m.p == 1 and "p" not in m._buffers


def test_t_destination_is_a_module_class_attribute():
    """PyTorch: ``Module.T_destination`` is a class attribute (state_dict's type variable), so a buffer may not
    take that name (KeyError "attribute 'T_destination' already exists"). Before: no such attribute, and the
    buffer was registered."""
    assert hasattr(nn.Module, "T_destination")
    with pytest.raises(KeyError, match="attribute 'T_destination' already exists"):
        nn.Linear(1, 1).register_buffer("T_destination", None)


# ---- Flatten / Unflatten -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", ["B", 1.0])
def test_unflatten_checks_dim_in_forward_not_in_init(device, dim):
    """PyTorch 2.13: ``nn.Unflatten(dim, sizes)`` checks only the sizes when built (its repr shows the dim as
    given); a dim that is no int fails in forward, in Tensor.unflatten (TypeError naming 'dim'). Before: the
    constructor raised TypeError("invalid argument type for dim parameter")."""
    u = nn.Unflatten(dim, (2, 5))
    assert repr(u) == f"Unflatten(dim={dim}, unflattened_size=(2, 5))"
    with pytest.raises(TypeError, match="unflatten.*dim"):
        u(torch.zeros(3, 10, device=device))
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found element of type "
                                        "tuple at pos 0"):
        nn.Unflatten(dim, (("a", 2), ("b", 5)))
    assert nn.Unflatten(1, (2, 5))(torch.zeros(3, 10, device=device)).shape == (3, 2, 5)


# ---- parametrize -------------------------------------------------------------------------------------------------
P = nn.utils.parametrize


class _Split(nn.Module):
    """A parametrization in terms of two tensors (``is_tensor`` False)."""

    def __init__(self, scale: bool = False) -> None:
        super().__init__()
        if scale:
            self.s = nn.Parameter(torch.full((), 3.0))

    def forward(self, a, b):
        return (a + b) * self.s if hasattr(self, "s") else a + b

    def right_inverse(self, x):
        return x / 2, x / 2


def test_removing_a_multi_tensor_parametrization_makes_a_buffer_when_nothing_needs_grad(device):
    """PyTorch: remove_parametrizations(leave_parametrized=True) of a parametrization of several tensors keeps
    ``Parameter(t) if t.requires_grad else t`` — a frozen weight comes back as a buffer. Before: a Parameter
    whenever the first original was one (a frozen weight stayed in ``parameters()``)."""
    lin = nn.Linear(2, 2).to(device)
    lin.weight.requires_grad_(False)
    want = lin.weight.detach().clone()
    P.register_parametrization(lin, "weight", _Split())
    P.remove_parametrizations(lin, "weight")
    assert "weight" in lin._buffers and "weight" not in lin._parameters
    assert type(lin.weight) is torch.Tensor and not lin.weight.requires_grad
    assert torch.allclose(lin.weight, want)
    assert [n for n, _ in lin.named_parameters()] == ["bias"]


def test_removing_a_multi_tensor_parametrization_makes_a_parameter_when_its_own_parameter_needs_grad(device):
    """PyTorch: the kept value is computed with grad mode on, so a buffer parametrized by a module with a
    parameter of its own comes back as a (leaf) Parameter. Before: the value was computed under no_grad and,
    the originals being buffers, registered as a buffer."""
    m = nn.Module()
    m.register_buffer("b", torch.ones(2, device=device))
    P.register_parametrization(m, "b", _Split(scale=True))
    P.remove_parametrizations(m, "b")
    assert "b" in m._parameters and isinstance(m.b, nn.Parameter)
    assert m.b.requires_grad and m.b.is_leaf and m.b.grad_fn is None
    assert m.b.tolist() == [3.0, 3.0]


def test_pickling_a_parametrized_module_names_pytorch_s_page():
    """PyTorch's message when a parametrized module is pickled or copied: it points at the tutorial's section on
    checkpoints. Before: the URL lacked the section anchor."""
    import copy
    lin = nn.Linear(2, 2)
    P.register_parametrization(lin, "weight", _Split())
    with pytest.raises(RuntimeError, match=r"only supported through state_dict\(\)\. See:\n.*saving_loading_models"
                                           r"\.html#saving-loading-a-general-checkpoint-for-inference-and-or-"
                                           r"resuming-training$"):
        copy.copy(lin)


# ---- requires_grad_ ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0, 1, "no", None])
def test_requires_grad_refuses_a_value_that_is_no_bool(device, value):
    """PyTorch: ``Tensor.requires_grad_`` (and so ``Module.requires_grad_``) takes a bool only: TypeError
    "requires_grad_(): argument 'requires_grad' (position 1) must be bool, not int". Before: any value was taken
    by its truth, so ``model.requires_grad_("no")`` silently un-froze the model and ``0`` froze it."""
    lin = nn.Linear(2, 2).to(device)
    with pytest.raises(TypeError, match=rf"requires_grad_\(\): argument 'requires_grad' \(position 1\) must be "
                                        rf"bool, not {type(value).__name__}"):
        lin.requires_grad_(value)
    with pytest.raises(TypeError, match="must be bool"):
        torch.zeros(1, device=device).requires_grad_(value)
    assert lin.weight.requires_grad
    assert lin.requires_grad_(False) is lin and not lin.weight.requires_grad


def test_parameter_checks_requires_grad_as_pytorch(device):
    """PyTorch: ``nn.Parameter(data, requires_grad)`` goes through ``Tensor._make_subclass``, whose parser takes a
    bool only (TypeError "_make_subclass(): argument 'require_grad' (position 3) must be bool, not int") and whose
    dtype check says "Only Tensors of floating point and complex dtype can require gradients". Before:
    ``requires_grad=0`` silently made a frozen parameter, and the message began with a lower-case "only"."""
    with pytest.raises(TypeError, match=r"_make_subclass\(\): argument 'require_grad' \(position 3\) must be "
                                        r"bool, not int"):
        nn.Parameter(torch.zeros(1, device=device), requires_grad=0)
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require "
                                           "gradients$"):
        nn.Parameter(torch.zeros(2, dtype=torch.int64, device=device))
    p = nn.Parameter(torch.zeros(2, dtype=torch.int64, device=device), requires_grad=False)
    assert p.dtype == torch.int64 and not p.requires_grad


class _OldStyle(nn.Module):
    """A subclass written before register_buffer had ``persistent`` (as some libraries still are)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list = []
        self.register_buffer("b", torch.zeros(1))

    def register_buffer(self, name, tensor):  # the old two-argument signature
        self.calls.append(name)
        super().register_buffer(name, tensor)


def test_assigning_a_buffer_to_a_subclass_with_an_old_register_buffer(device):
    """PyTorch: ``module.b = tensor`` calls an overriding ``register_buffer`` without ``persistent`` where the
    override does not take it, and refuses a non-persistent buffer there (RuntimeError). Before: it always
    passed ``persistent``, so assigning any buffer of such a module raised TypeError."""
    m = _OldStyle()
    m.b = torch.ones(1, device=device)
    m.b = nn.Buffer(torch.full((1,), 2.0, device=device))
    assert m.calls == ["b", "b", "b"] and m.b.item() == 2.0 and list(m.state_dict()) == ["b"]
    with pytest.raises(RuntimeError, match="Registering a non-persistent buffer on a Module subclass that "
                                           "implements register_buffer\\(\\) without the persistent argument"):
        m.b = nn.Buffer(torch.ones(1, device=device), persistent=False)


# ---- a 0-d cpu parameter beside a device tensor (found through a parametrization's own parameter) -----------------
@pytest.mark.parametrize("op", ["mul", "rmul", "add", "sub", "where", "matmul_mul"])
def test_a_0d_cpu_parameter_used_with_a_device_tensor_gets_its_gradient(device, op):
    """PyTorch: a 0-d CPU tensor is accepted as an operand beside a tensor of another device, and a 0-d CPU
    parameter that requires grad gets its gradient (on the cpu) from backward — e.g. a learnable CPU temperature,
    or a parametrization's own parameter on a module moved to the device. Before: the operand was copied to the
    device as a plain array, so the result did not require grad and ``s.grad`` silently stayed None."""
    s = nn.Parameter(torch.full((), 3.0))
    b = torch.arange(2.0, device=device)
    fns = {"mul": lambda: b * s, "rmul": lambda: s * b, "add": lambda: b + s, "sub": lambda: s - b,
           "where": lambda: torch.where(b > 0, s, b), "matmul_mul": lambda: (b @ b) * s}
    want = {"mul": 1.0, "rmul": 1.0, "add": 2.0, "sub": 2.0, "where": 1.0, "matmul_mul": 1.0}
    out = fns[op]()
    assert out.requires_grad and out.device == b.device
    out.sum().backward()
    assert s.grad is not None and s.grad.device.type == "cpu" and s.grad.item() == want[op]
    with torch.no_grad():
        assert not (b * s).requires_grad


def test_assigning_a_value_of_another_device_to_a_parametrized_tensor_raises(device):
    """PyTorch: assigning to a parametrized tensor stores ``right_inverse(value)`` with ``original.set_``, which
    refuses a value on another device (RuntimeError "Attempted to set the storage of a tensor on device ... to a
    storage on different device ..."). Before: the original silently moved to the value's device (a cpu value
    assigned to an opencl module's weight left that weight on the cpu). On the cpu backend: the same-device
    store still works."""
    lin = nn.Linear(2, 2).to(device)
    P.register_parametrization(lin, "weight", _Half())
    if lin.weight.device.type != "cpu":
        with pytest.raises(RuntimeError, match=r'Attempted to set the storage of a tensor on device "\S+" to a '
                                               r'storage on different device "cpu"'):
            lin.weight = torch.ones(2, 2)
        assert lin.parametrizations.weight.original.device == lin.bias.device
    lin.weight = torch.ones(2, 2, device=device)
    assert lin.weight.cpu().tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert lin.parametrizations.weight.original.cpu().tolist() == [[0.5, 0.5], [0.5, 0.5]]


class _Half(nn.Module):
    """``2 * x``, with its inverse."""

    def forward(self, x):
        return 2 * x

    def right_inverse(self, x):
        return x / 2
