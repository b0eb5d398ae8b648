"""Review 21j: torch.distributions, a second pass against PyTorch 2.13 (support boundaries, validate_args,
constraints and the biject_to/transform_to registries, transforms, KL pairs, sampling paths)."""
import coretorch as torch
import coretorch.distributions as D


def test_transform_to_positive_semidefinite_and_transforms_star_import():
    """PyTorch 2.13 registers ``transform_to(constraints.positive_semidefinite)`` (a PositiveDefiniteTransform,
    whose image is inside the PSD cone) and lists Cat/Stack/CorrCholesky/LowerCholesky/PositiveDefinite/
    CumulativeDistribution transforms in ``torch.distributions.transforms.__all__``; coretorch raised
    NotImplementedError and ``from ...transforms import *`` missed those six names."""
    tr = D.transform_to(D.constraints.positive_semidefinite)
    assert isinstance(tr, D.transforms.PositiveDefiniteTransform)
    y = tr(torch.tensor([[0.5, 0.0], [2.0, 0.3]], dtype=torch.float64))
    assert bool(D.constraints.positive_semidefinite.check(y))
    ns: dict = {}
    exec("from coretorch.distributions.transforms import *", ns)
    for name in ("CatTransform", "StackTransform", "CorrCholeskyTransform", "LowerCholeskyTransform",
                 "PositiveDefiniteTransform", "CumulativeDistributionTransform", "ExpTransform"):
        assert ns[name] is getattr(D, name)


def test_geometric_and_multivariate_normal_argument_messages():
    """PyTorch 2.13: ``Geometric(probs=0)`` raises ValueError "... to be positive but found invalid values:" listing
    only the invalid entries, and a 1-D ``covariance_matrix`` is "covariance_matrix must be at least
    two-dimensional" (only ``scale_tril`` says "scale_tril matrix"); coretorch named an Interval constraint with
    "probs > 0" and printed every entry, and said "covariance_matrix matrix"."""
    import pytest
    with pytest.raises(ValueError, match=r"to be positive but found invalid values:\ntensor\(\[0\.\]"):
        D.Geometric(torch.tensor([0.0, 0.5]))
    for kw, want in [("covariance_matrix", "covariance_matrix must"), ("precision_matrix", "precision_matrix must"),
                     ("scale_tril", "scale_tril matrix must")]:
        with pytest.raises(ValueError, match=want):
            D.MultivariateNormal(torch.zeros(2), **{kw: torch.ones(2)})


def test_ambiguous_kl_warning_names_the_pair_to_register():
    """With KL registered for (A, Normal) and (Normal, B) only, PyTorch 2.13 warns "Ambiguous
    kl_divergence(A, B). Please register_kl(A, B)" (the most specific p of one match, q of the other) and uses
    the (A, Normal) rule; coretorch's warning suggested register_kl(Normal, Normal)."""
    import pytest

    class A(D.Normal):
        pass

    class B(D.Normal):
        pass

    D.register_kl(A, D.Normal)(lambda p, q: torch.tensor(1.0))
    D.register_kl(D.Normal, B)(lambda p, q: torch.tensor(2.0))
    with pytest.warns(RuntimeWarning, match=r"Ambiguous kl_divergence\(A, B\)\. Please register_kl\(A, B\)"):
        value = D.kl_divergence(A(torch.tensor(0.0), torch.tensor(1.0)), B(torch.tensor(0.0), torch.tensor(1.0)))
    assert value.item() == 1.0


def test_distribution_parameters_are_the_given_tensors_so_optimizers_accept_them():
    """PyTorch 2.13's ``broadcast_tensors`` returns a tensor that already has the broadcast shape itself (no
    view), so ``Normal(loc, scale).loc is loc`` and ``torch.optim.Adam([d.loc, d.scale])`` works; coretorch
    stored an expand view (a non-leaf), and the optimizer raised "can't optimize a non-leaf Tensor"."""
    loc = torch.zeros(3, requires_grad=True)
    scale = torch.nn.Parameter(torch.ones(3))
    d = D.Normal(loc, scale)
    assert d.loc is loc and d.scale is scale
    assert D.Normal(loc, 1.0).loc is loc and D.Bernoulli(probs=torch.tensor([0.3, 0.7])).probs is not None
    a, b = torch.broadcast_tensors(loc, torch.zeros(1))
    assert a is loc and b is not loc and tuple(b.shape) == (3,)
    opt = torch.optim.SGD([d.loc, d.scale], lr=0.1)
    opt.zero_grad()
    (-d.log_prob(torch.tensor([1.0, 2.0, 3.0])).sum()).backward()
    opt.step()
    assert loc.tolist() == [0.1, 0.2, 0.3] or max(abs(x - y) for x, y in zip(loc.tolist(), [0.1, 0.2, 0.3])) < 1e-6


def test_dirichlet_and_beta_mode_with_every_concentration_below_one():
    """PyTorch 2.13's Dirichlet.mode answers the first vertex (1, 0, ..., 0) when every concentration is below 1
    (and Beta.mode, its first coordinate, 1); coretorch answered the vertex of the largest concentration, so
    ``Dirichlet([0.3, 0.7]).mode`` was (0, 1) and ``Beta(0.3, 0.7).mode`` 0."""
    t = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
    assert D.Dirichlet(t([[0.3, 0.7], [0.5, 0.5], [2.0, 3.0]])).mode.tolist() == [[1.0, 0.0], [1.0, 0.0],
                                                                                  [1 / 3, 2 / 3]]
    assert D.Beta(t([0.3, 0.7]), t([0.7, 0.3])).mode.tolist() == [1.0, 1.0]


def test_wishart_df_constraint_depends_on_the_matrix_size():
    """PyTorch 2.13's ``Wishart.arg_constraints`` is a property whose ``df`` entry is ``greater_than(p - 1)`` for
    p x p matrices (GreaterThan(lower_bound=2) for 3 x 3); coretorch's class dict said greater_than(0)."""
    d = D.Wishart(torch.tensor(3.0), covariance_matrix=torch.eye(3))
    assert repr(d.arg_constraints["df"]) == "GreaterThan(lower_bound=2)"
    assert not bool(d.arg_constraints["df"].check(torch.tensor(1.5)))
    assert repr(d.expand((2,)).arg_constraints["df"]) == "GreaterThan(lower_bound=2)"
    assert isinstance(D.Wishart.__dict__["arg_constraints"], property)


def test_bernoulli_log_prob_of_integer_values_names_the_parameter_dtype():
    """``Bernoulli(float64 probs).log_prob(int64 tensor)`` fails in PyTorch 2.13 inside
    binary_cross_entropy_with_logits with "result type Double can't be cast to the desired output type Long" (the
    input's dtype); coretorch always said "Float"."""
    import pytest
    with pytest.raises(RuntimeError, match="result type Double can't be cast to the desired output type Long"):
        D.Bernoulli(torch.tensor([0.3, 0.7], dtype=torch.float64)).log_prob(torch.tensor([1, 0]))


def test_binomial_sample_draws_through_torch_binomial(device):
    """PyTorch 2.13's ``Binomial.sample`` is ``torch.binomial(total_count.expand(shape), probs.expand(shape))``:
    same seed, same draws, and its cost does not grow with total_count; coretorch summed total_count Bernoulli
    draws (a count of 1e9 took minutes)."""
    n = torch.tensor([[0.0], [3.0], [1e9]], dtype=torch.float64, device=device)
    p = torch.tensor([0.0, 0.3, 1.0], dtype=torch.float64, device=device)
    d = D.Binomial(n, p)
    torch.manual_seed(5)
    a = d.sample((4,))
    torch.manual_seed(5)
    b = torch.binomial(n.expand(4, 3, 3), p.expand(4, 3, 3))
    assert a.shape == (4, 3, 3) and torch.equal(a, b)
    assert a[:, 0].eq(0).all() and a[:, :, 0].eq(0).all() and a[:, 2, 2].eq(1e9).all()
    big = a[:, 2, 1]
    assert bool(((big - 3e8).abs() < 6 * (1e9 * 0.21) ** 0.5).all())
