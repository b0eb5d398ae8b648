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
