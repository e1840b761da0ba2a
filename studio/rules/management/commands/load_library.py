"""`manage.py load_library DOMAIN --workspace SLUG --as USERNAME [--submit]`: add the paper's
rules of one domain (ipc_trucks, textworld, scienceworld) and their labelers to a workspace.

The rules are created as drafts by USERNAME, who must hold the author role there; with
``--submit`` they are also submitted for review.  Nothing is approved: a reviewer does that.
Running it again adds only what is missing.  Exit status 2 (nothing changed) for an unknown
domain, workspace or user, or a user who is not an author of the workspace.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from studio.logic import library
from studio.rules.library import install_library
from studio.workspaces.models import Membership, Role, Workspace


class Command(BaseCommand):
    help = "Add the rule library's rules and labelers of one domain to a workspace."

    def add_arguments(self, parser):
        # No `choices`: argparse would exit with status 2 as well, but a message of our own
        # names the domains with what each holds.
        parser.add_argument("domain", help=f"one of {', '.join(library.DOMAINS)}")
        parser.add_argument("--workspace", required=True, metavar="SLUG")
        parser.add_argument("--as", required=True, dest="username", metavar="USERNAME",
                            help="the rule author the rules are written by")
        parser.add_argument("--submit", action="store_true",
                            help="also submit the new rules for review")

    def handle(self, *args, domain, workspace, username, submit, **options):
        if domain not in library.DOMAINS:
            known = "; ".join(f"{d.key} ({len(library.rules_for(d.key))} rules)"
                              for d in library.DOMAINS.values())
            raise CommandError(f"unknown domain {domain!r}; the library has {known}",
                               returncode=2)
        space = Workspace.objects.filter(slug=workspace).first()
        if space is None:
            raise CommandError(f"no workspace with slug {workspace!r}", returncode=2)
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}", returncode=2)
        if not Membership.objects.filter(workspace=space, user=user, role=Role.AUTHOR).exists():
            raise CommandError(f"{username} does not hold the author role in workspace "
                               f"{workspace!r}", returncode=2)
        result = install_library(space, user, domain, submit=submit)
        self.stdout.write(result.summary())
        for name in result.rules_created:
            self.stdout.write(f"  + rule {name}")
        for name in result.rules_skipped:
            self.stdout.write(f"  = rule {name} (already there)")
        for atom in result.labelers_created:
            self.stdout.write(f"  + labeler {atom}")
        for atom in result.labelers_skipped:
            self.stdout.write(f"  = labeler {atom} (already there)")
