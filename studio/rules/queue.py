"""The review queue: rule versions waiting for a person's review, and their own versions that
reviewers sent back."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from studio.workspaces.models import Role, Workspace

from .models import RuleVersion, VersionStatus


def waiting_for_review(workspace: Workspace, user, roles) -> QuerySet[RuleVersion]:
    """Versions in review that ``user`` may approve: a reviewer's, written by someone else
    (a version written through a token names the token's creator as its author)."""
    if Role.REVIEWER not in roles:
        return RuleVersion.objects.none()
    return (RuleVersion.objects.filter(rule__workspace=workspace, status=VersionStatus.IN_REVIEW)
            .exclude(author=user).select_related("rule", "author")
            .order_by("submitted_at", "id"))


def rejected_for(workspace: Workspace, user, roles) -> QuerySet[RuleVersion]:
    """The author's rejected versions whose rule has no newer version yet (once a new version
    is written the rejection has been answered)."""
    if Role.AUTHOR not in roles:
        return RuleVersion.objects.none()
    newer = RuleVersion.objects.filter(rule=OuterRef("rule"), number__gt=OuterRef("number"))
    return (RuleVersion.objects.filter(rule__workspace=workspace, status=VersionStatus.REJECTED,
                                       author=user)
            .exclude(Exists(newer)).select_related("rule", "reviewer")
            .order_by("-reviewed_at", "-id"))
