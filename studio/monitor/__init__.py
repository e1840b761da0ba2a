"""Runtime monitors over the formal core (no Django): TRAC, TRAC_R, instance-level monitoring,
rule sets over sessions, and the streaming offline audit."""

from .automaton import CompiledRule, RuleError, RuleMachines, compile_rule
from .fast import FastSessionMonitor
from .monitors import (
                       PENDING,
                       SATISFIED,
                       VIOLATED,
                       InstanceMonitor,
                       Trac,
                       TracR,
                       Violation,
                       WitnessEntry,
)
from .session import RuleResult, RuleSet, SessionMonitor

__all__ = [
                       "PENDING",
                       "SATISFIED",
                       "VIOLATED",
                       "CompiledRule",
                       "FastSessionMonitor",
                       "InstanceMonitor",
                       "RuleError",
                       "RuleMachines",
                       "RuleResult",
                       "RuleSet",
                       "SessionMonitor",
                       "Trac",
                       "TracR",
                       "Violation",
                       "WitnessEntry",
                       "compile_rule",
]
