"""A plain MLP; the seed fixes the initial weights so every rank can build the same model."""
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, sizes, seed=0, activation=nn.Tanh):
        super().__init__()
        if len(sizes) < 2:
            raise ValueError("an MLP needs at least an input and an output size")
        generator = torch.Generator().manual_seed(seed)
        layers = []
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            linear = nn.Linear(fan_in, fan_out)
            bound = 1.0 / fan_in ** 0.5
            with torch.no_grad():
                # Drawn from our own generator, not the global one, so the weights do not depend on
                # what else the process has sampled before building the model.
                linear.weight.uniform_(-bound, bound, generator=generator)
                linear.bias.uniform_(-bound, bound, generator=generator)
            layers.append(linear)
            if i < len(sizes) - 2:
                layers.append(activation())
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)
