"""Installing the rule library (``studio.logic.library``) into a workspace.

``install_library`` creates one domain's rules, each a draft with the paper's English (or, with
``submit``, submitted for review), and the labelers that produce their atoms.  It never approves:
the rules audit only once a reviewer who did not install them approves them, like any other rule.
Running it again adds nothing: a rule whose name, or a labeler whose atom, the workspace already
has is left as it is and reported as skipped (whatever its formula or configuration: the
workspace's own version wins).  Callers check that the actor may author rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from studio.errors import Conflict, ServiceError
from studio.logic import library
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Workspace
from studio.workspaces.services import record

from . import services
from .evidence import evidence
from .models import Labeler, Rule


@dataclass
class Installed:
    domain: str
    rules_created: list[str] = field(default_factory=list)
    rules_skipped: list[str] = field(default_factory=list)  # a rule of that name existed
    labelers_created: list[str] = field(default_factory=list)
    labelers_skipped: list[str] = field(default_factory=list)  # that atom had a labeler
    submitted: bool = False
    # Asked to submit, left as drafts: their warnings need the author's acknowledgement.
    rules_with_warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        title = library.DOMAINS[self.domain].title
        state = "submitted for review" if self.submitted else "as drafts"
        parts = [f"{title}: {_count(len(self.rules_created), 'rule')} added {state}"]
        if self.rules_with_warnings:
            parts.append(f"{_count(len(self.rules_with_warnings), 'rule')} left as drafts "
                         f"({', '.join(self.rules_with_warnings)}): they have warnings to "
                         "acknowledge on their pages before they are submitted")
        if self.rules_skipped:
            parts.append(f"{_count(len(self.rules_skipped), 'rule')} already in the workspace "
                         "left as they are")
        parts.append(f"{_count(len(self.labelers_created), 'labeler')} added")
        if self.labelers_skipped:
            parts.append(f"{_count(len(self.labelers_skipped), 'labeler')} already there")
        return "; ".join(parts) + "."

    def as_dict(self) -> dict:
        return {"domain": self.domain, "submitted": self.submitted,
                "rules_created": self.rules_created, "rules_skipped": self.rules_skipped,
                "labelers_created": self.labelers_created,
                "labelers_skipped": self.labelers_skipped,
                "rules_with_warnings": self.rules_with_warnings}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _description(entry: library.LibraryRule) -> str:
    # Reviewers see where the formula comes from and what was decided in rebuilding it.
    return f"{entry.english}\n\nFrom {library.PAPER}, {entry.source}. {entry.note}"


@transaction.atomic
def install_library(workspace: Workspace, actor, domain: str, submit: bool = False) -> Installed:
    """Add the library's rules and labelers of ``domain`` that the workspace lacks."""
    try:
        entries = library.rules_for(domain)
        labelers = library.labelers_for(domain)
    except ValueError as exc:
        raise ServiceError(str(exc), field="domain", status=422) from None
    result = Installed(domain, submitted=submit)
    # Labelers first: the rules submitted below then find the atoms they produce.
    existing_atoms = set(Labeler.objects.filter(workspace=workspace,
                                                atom__in=[lab.atom for lab in labelers])
                         .values_list("atom", flat=True))
    for labeler in labelers:
        if labeler.atom in existing_atoms:
            result.labelers_skipped.append(labeler.atom)
            continue
        try:
            services.create_labeler(workspace, actor, labeler.atom, labeler.kind,
                                    dict(labeler.config), labeler.description)
        except Conflict:
            result.labelers_skipped.append(labeler.atom)
            continue
        result.labelers_created.append(labeler.atom)
    existing_rules = set(Rule.objects.filter(workspace=workspace,
                                             name__in=[e.name for e in entries])
                         .values_list("name", flat=True))
    for entry in entries:
        if entry.name in existing_rules:
            result.rules_skipped.append(entry.name)
            continue
        try:
            rule = services.create_rule(workspace, actor, entry.name, entry.formula,
                                        _description(entry), english=entry.english)
        except Conflict:  # created meanwhile by someone else: theirs stands
            result.rules_skipped.append(entry.name)
            continue
        result.rules_created.append(entry.name)
        evidence().install_library_cases(rule, actor, entry.name)  # the paper's examples pin its meaning
        if submit:
            try:
                services.submit_for_review(rule.versions.get(number=1), actor)
            except ServiceError as exc:
                if exc.field != "acknowledgement":
                    raise
                result.rules_with_warnings.append(entry.name)
    record(workspace, actor, LogAction.RULE_LIBRARY_INSTALLED, None, **result.as_dict())
    return result
