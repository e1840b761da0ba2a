"""`manage.py rebuild_vocabulary [SLUG ...]`: recount each workspace's vocabulary (built-in
atoms, arrival labels, data paths with their JSON types; on which kind of event, how many events,
example values) from its stored events - for workspaces loaded before the vocabulary was kept or
counted, and after events were erased (an erasure leaves their counts and examples in it).  Every
workspace when no slug is given."""

from django.core.management.base import BaseCommand, CommandError

from studio.traces.vocabulary import rebuild
from studio.workspaces.models import Workspace


class Command(BaseCommand):
    help = "Rebuild the vocabulary of workspaces from their stored events."

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", help="workspaces (all when none is given)")

    def handle(self, *args, slugs=(), **options):
        workspaces = Workspace.objects.order_by("slug")
        if slugs:
            workspaces = workspaces.filter(slug__in=slugs)
            missing = sorted(set(slugs) - set(workspaces.values_list("slug", flat=True)))
            if missing:
                raise CommandError(f"no workspace with the slug {', '.join(missing)}")
        for workspace in workspaces:
            written = rebuild(workspace)
            self.stdout.write(f"{workspace.slug}: {written} vocabulary entries")
