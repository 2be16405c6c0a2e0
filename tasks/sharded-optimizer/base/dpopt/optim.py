"""Adam, replicated: every rank keeps the full optimizer state and applies the full update."""
import math

import torch


def adam_update_(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay):
    """One Adam step (L2 weight decay, as torch.optim.Adam), in place on ``param``, ``exp_avg`` and
    ``exp_avg_sq``. ``step`` counts from 1. Element-wise, so it gives the same bits on any slice."""
    if weight_decay != 0.0:
        grad = grad.add(param, alpha=weight_decay)
    exp_avg.mul_(beta1).add_(grad, alpha=1.0 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
    bias_correction1 = 1.0 - beta1 ** step
    bias_correction2 = 1.0 - beta2 ** step
    denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-lr / bias_correction1)


class Adam:
    """Adam over a list of parameters. Expects gradients already averaged over data-parallel ranks."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        self.params = list(params)
        if not self.params:
            raise ValueError("Adam got an empty parameter list")
        self.lr = float(lr)
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = float(eps)
        self.weight_decay = float(weight_decay)
        self.step_count = 0
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.contiguous_format) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.contiguous_format) for p in self.params]

    @torch.no_grad()
    def step(self):
        self.step_count += 1
        beta1, beta2 = self.betas
        for p, m, v in zip(self.params, self.exp_avg, self.exp_avg_sq):
            grad = p.grad if p.grad is not None else torch.zeros_like(p)
            adam_update_(p, grad, m, v, self.step_count, self.lr, beta1, beta2, self.eps, self.weight_decay)

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    def state_dict(self):
        return {
            "step": self.step_count,
            "exp_avg": [m.clone() for m in self.exp_avg],
            "exp_avg_sq": [v.clone() for v in self.exp_avg_sq],
            "hyperparams": {
                "lr": self.lr,
                "betas": self.betas,
                "eps": self.eps,
                "weight_decay": self.weight_decay,
            },
        }

    def load_state_dict(self, state_dict):
        exp_avg, exp_avg_sq = state_dict["exp_avg"], state_dict["exp_avg_sq"]
        if len(exp_avg) != len(self.params) or len(exp_avg_sq) != len(self.params):
            raise ValueError(
                f"checkpoint has state for {len(exp_avg)} parameters, optimizer has {len(self.params)}"
            )
        with torch.no_grad():
            for p, dst_m, dst_v, m, v in zip(self.params, self.exp_avg, self.exp_avg_sq, exp_avg, exp_avg_sq):
                if m.shape != p.shape or v.shape != p.shape:
                    raise ValueError(f"state of shape {tuple(m.shape)} does not fit parameter {tuple(p.shape)}")
                dst_m.copy_(m)
                dst_v.copy_(v)
        self.step_count = int(state_dict["step"])
        hyper = state_dict["hyperparams"]
        self.lr = float(hyper["lr"])
        self.betas = (float(hyper["betas"][0]), float(hyper["betas"][1]))
        self.eps = float(hyper["eps"])
        self.weight_decay = float(hyper["weight_decay"])
