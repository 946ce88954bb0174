"""Your own DP-SGD training loop, audited by privgame (docs/extending.md, section 6).

``dp_sgd`` is a plain-PyTorch DP-SGD: Poisson sampling, per-example gradients with ``torch.func``, clipping to C,
Gaussian noise N(0, σ²C²) on the sum, division by the expected batch size, an SGD step.  privgame calls it with a
``LoopRun`` (the model, the rows, the per-example loss, σ, q, T, C, the learning rate, a torch generator) and audits
what it trains: white-box (``dpsgd-loop``: the rows include canary rows whose gradient is a Dirac on a canary
layer) or black-box (``dpsgd-blackbox``: the member canary examples join the rows).  ``opacus_sgd`` wraps Opacus
under the same contract.  The configs name them ``loop = "extending_loop:dp_sgd"`` with ``plugins =
["extending_loop"]``.
"""

from __future__ import annotations

import torch
from torch.func import functional_call, grad, vmap


def dp_sgd(run):
    """DP-SGD on ``run.model`` in place (Abadi et al. 2016, with the Poisson sampling of its analysis)."""
    model, gen = run.model, run.generator
    params = {name: p.detach() for name, p in model.named_parameters() if p.requires_grad}
    n = run.x.shape[0]
    divisor = run.sampling_rate * (run.dataset_size or n)  # the expected batch size qN, public
    momenta = {name: torch.zeros_like(p) for name, p in params.items()}

    def loss_one(p, x, y):  # one example's loss, as a function of the parameters
        return run.loss_fn(functional_call(model, p, (x.unsqueeze(0),)), y.unsqueeze(0)).sum()

    per_example = vmap(grad(loss_one), in_dims=(None, 0, 0))
    for _ in range(run.steps):
        batch = torch.rand(n, generator=gen, dtype=torch.float64, device=run.device) < run.sampling_rate
        sums = {name: torch.zeros_like(p) for name, p in params.items()}
        if batch.any():
            grads = per_example(params, run.x[batch], run.y[batch])
            norms = torch.stack([g.flatten(1).square().sum(1) for g in grads.values()]).sum(0).sqrt()
            factors = (run.clip_norm / norms.clamp(min=run.clip_norm)).to(norms.dtype)  # min(1, C/‖g‖)
            sums = {name: torch.tensordot(factors, g, dims=1) for name, g in grads.items()}
        with torch.no_grad():
            for name, p in params.items():
                noise = torch.randn(p.shape, generator=gen, dtype=p.dtype, device=p.device)
                g = (sums[name] + run.noise_multiplier * run.clip_norm * noise) / divisor
                momenta[name].mul_(run.momentum).add_(g)
                p.sub_(run.learning_rate * momenta[name])
    with torch.no_grad():  # the trained values into the module privgame gave
        for name, p in model.named_parameters():
            if name in params:
                p.copy_(params[name])
    return model


def opacus_sgd(run):
    """The same contract wrapping Opacus's PrivacyEngine (hooks, Poisson sampling), for comparison."""
    from privgame.mechanisms.dpsgd.loop import opacus_loop

    return opacus_loop(run)
