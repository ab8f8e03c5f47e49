"""magma's placement policy (placeholder while experimenting)."""
from .fgd import FGD


class Magma(FGD):
    name = "magma"


POLICY = Magma
