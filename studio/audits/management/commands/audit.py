"""`manage.py audit LOG.jsonl [...] --rules RULES [--format json|text] [--anticipate]`: the
offline audit.

Exit status: 0 when every line was audited, 1 when some lines were bad (each reported on stderr
with its file and line number; the rest still audited), 2 when the rules or a log cannot be used.
"""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from studio.monitor.audit import Audit, RulesFileError, load_rules, render_text
from studio.monitor.verdicts import COUNTING_MODES, with_old_names

VERDICT_FIELDS = ("verdict", "final", "session_verdict", "complete")


def in_public_words(report: dict) -> dict:
    """The report's verdicts in the words of every page and export (complied / violated / open),
    the stored names kept under ``<field>_was`` until they are retired (docs/api-verdicts.md)."""
    return {**report, "sessions": [
        {**session, "rules": [with_old_names(rule, [f for f in VERDICT_FIELDS if f in rule])
                              for rule in session["rules"]]}
        for session in report["sessions"]]}


class Command(BaseCommand):
    help = "Audit JSONL agent logs against LTL rules (one `name: formula` per line)."

    def add_arguments(self, parser):
        parser.add_argument("logs", nargs="+", metavar="LOG.jsonl", help="JSON-lines logs")
        parser.add_argument("--rules", required=True, help="rules file: `name: formula` lines")
        parser.add_argument("--format", choices=("json", "text"), default="text")
        parser.add_argument(
            "--counting", choices=COUNTING_MODES, default=None,
            help="how violations are counted for every rule (default: per_instance for rules "
                 "of the form G phi, after_violation for the others)")
        parser.add_argument(
            "--anticipate", action="store_true",
            help="also give each rule's complete verdict over the whole session (permanently_/"
                 "currently_ satisfied/violated) and complete_step, the first step after which it "
                 "was permanent")

    def handle(self, *args, **options):
        try:
            rules = load_rules(options["rules"], counting=options["counting"])
        except RulesFileError as exc:
            raise CommandError(str(exc), returncode=2) from None
        audit = Audit(rules, anticipate=options["anticipate"])
        bad_lines = 0

        def on_error(error):
            nonlocal bad_lines
            bad_lines += 1
            self.stderr.write(str(error))

        for path in options["logs"]:
            try:
                audit.add_file(path, on_error)
            except OSError as exc:
                raise CommandError(f"{path}: cannot read log: {exc.strerror}", returncode=2) from None
        audit.errors.clear()  # already reported as they came
        report = audit.report()
        if options["format"] == "json":
            self.stdout.write(json.dumps(in_public_words(report), ensure_ascii=False))
        else:
            self.stdout.write(render_text(report), ending="")
        if bad_lines:
            self.stderr.write(f"{bad_lines} bad line{'s' if bad_lines != 1 else ''} skipped")
            sys.exit(1)
