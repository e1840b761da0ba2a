"""English to LTL: rules written in English, read as formulas of the rule language.

Every engine answers through one interface (``base``): ``formalise(english) -> Formalisation``.
The offline engine (``formaliser``) reads structured English with a lark grammar and needs no
model; an LLM engine plugs in behind the same interface.
"""

from .base import Formalisation, Formaliser
from .formaliser import OfflineFormaliser, formalise

__all__ = ["Formalisation", "Formaliser", "OfflineFormaliser", "formalise"]
