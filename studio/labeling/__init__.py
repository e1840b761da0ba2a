"""Labeling: from an event (and the one before it) to the atoms true at that step.  No Django.

A ``Labeling`` combines, in this order: the labels the event arrived with; the built-in atoms of
the canonical event (``tool_call:NAME``, ``stop_reason:R``, ``role:R``, ``studio.logic.events``);
and the workspace's declared labelers, each producing one atom (field predicates over JSON paths,
regular expressions over text fields, an LLM asked about the step: ``llm_labeler``, through the
chat client of ``llm``); and last the corrections people made, which override all of these.
Labelers are built from their stored declarations by ``declarations``.
"""

from .declarations import LABELER_SETTINGS, labeling_from_snapshot, make_labeler
from .labelers import (
                       FieldLabeler,
                       LabelerConfigError,
                       Labeling,
                       RegexLabeler,
)

__all__ = ["LABELER_SETTINGS", "FieldLabeler", "LabelerConfigError", "Labeling", "RegexLabeler",
           "labeling_from_snapshot", "make_labeler"]
