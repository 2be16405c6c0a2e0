"""The `probegate` operator provider: cosmic-ray finds it through the entry point
`cosmic_ray.operator_providers` (pyproject.toml), so its operators are `probegate/<Name>`."""

from .operators import OPERATORS
from .resources import RESOURCE_OPERATORS

_OPERATORS = {op.__name__: op for op in OPERATORS + RESOURCE_OPERATORS}


class OperatorProvider:
    """Provider of probegate's operators, in cosmic-ray's provider protocol (iterate names, index by name)."""

    def __iter__(self):
        return iter(_OPERATORS)

    def __getitem__(self, name):
        return _OPERATORS[name]
