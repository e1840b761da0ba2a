"""`manage.py create_workspace NAME --admin USERNAME`: the first workspace and its administrator.

With a fresh database nobody can sign in and nothing has a workspace.  Create the person first
(`manage.py createsuperuser`, or `--create-user` here, which asks for the password or reads
DJANGO_SUPERUSER_PASSWORD), then this makes the workspace and gives them every role in it, admin
included, so they add everyone else from the Members page.  Running it again changes nothing but
the roles it gives.
"""

from __future__ import annotations

import getpass
import os

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils.text import slugify

from studio.workspaces import services
from studio.workspaces.models import Role, Workspace

ALL_ROLES = (Role.ADMIN, Role.AUTHOR, Role.REVIEWER, Role.AUDITOR)


class Command(BaseCommand):
    help = "Create a workspace (or find it by its slug) and make a person its administrator."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the workspace's name, e.g. Payments")
        parser.add_argument("--admin", required=True, metavar="USERNAME",
                            help="the person who administers it (every role)")
        parser.add_argument("--slug", help="its address, /w/<slug>/ (default: from the name)")
        parser.add_argument("--create-user", action="store_true",
                            help="create the person too; the password is asked for, or read "
                                 "from DJANGO_SUPERUSER_PASSWORD")

    def handle(self, *args, name: str, admin: str, slug: str | None, create_user: bool,
               **options):
        slug = slug or slugify(name)[:60]
        if not slug:
            raise CommandError(f"{name!r} gives no usable slug: pass --slug")
        users = get_user_model().objects
        user = users.filter(username=admin).first()
        if user is None:
            if not create_user:
                raise CommandError(f"there is no user {admin!r}: create them with `manage.py "
                                   "createsuperuser`, or pass --create-user")
            user = services.create_user(admin, self._password(admin))
            self.stdout.write(f"Created user {admin}.")
        with transaction.atomic():
            workspace = Workspace.objects.filter(slug=slug).first()
            if workspace is None:
                workspace = services.create_workspace(name, owner=user, slug=slug,
                                                      roles=ALL_ROLES)
                self.stdout.write(f"Created workspace {workspace.name} at /w/{slug}/.")
            else:
                for role in ALL_ROLES:
                    services.add_member(workspace, user, role)
                self.stdout.write(f"Workspace {workspace.name} at /w/{slug}/ already exists.")
        self.stdout.write(f"{admin} is its administrator ({', '.join(ALL_ROLES)}).")

    def _password(self, username: str) -> str:
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD")
        if not password:
            if not self.stdin_is_interactive():
                raise CommandError("no password: set DJANGO_SUPERUSER_PASSWORD or run it in a "
                                   "terminal")
            password = getpass.getpass(f"Password for {username}: ")
        try:
            validate_password(password, get_user_model()(username=username))
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        return password

    @staticmethod
    def stdin_is_interactive() -> bool:
        import sys

        return sys.stdin.isatty()
