"""`manage.py labeling_quality AUDIT_ID [--format text|json]`: how well an audit's verdicts agree
with the ground-truth labels: per rule TP, FP, FN, TN, precision, recall and F1, then the overall
figures, micro-averaged (counts summed over rules) and macro-averaged (the mean of the rules'
figures), as paper 000 measures labeling functions (Appendix F.1).  See studio.audits.quality.

A session counts as found violating a rule when the audit's verdict at its end is violated; only
sessions with a label for the rule count.  Exit status 2 (nothing printed on stdout) when there
is no audit with that id, or no label names one of its rules and a session it audited.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from studio.audits import quality, report
from studio.audits.models import AuditRun, RunStatus

COLUMNS = ("rule", "labelled", "audited", "TP", "FP", "FN", "TN", "precision", "recall", "F1",
           "labels outside")


class Command(BaseCommand):
    help = ("Precision, recall and F1 of an audit's verdicts against ground truth, per rule "
            "and overall.")

    def add_arguments(self, parser):
        parser.add_argument("audit_id", type=int, metavar="AUDIT_ID")
        parser.add_argument("--format", choices=("text", "json"), default="text")

    def handle(self, *args, audit_id, format, **options):
        run = AuditRun.objects.filter(pk=audit_id).first()
        if run is None:
            raise CommandError(f"no audit with id {audit_id}", returncode=2)
        rows = report.agreement(run)
        if not rows:
            raise CommandError(
                f"audit {audit_id} has no ground truth: no label names any of its rules; "
                "load labels (JSONL or CSV) on the workspace's Ground truth page", returncode=2)
        overall = rows.overall
        if not overall.counts.labelled:
            raise CommandError(
                f"audit {audit_id} has no ground truth: labels name its rules, but none of the "
                f"sessions it audited ({overall.outside} labels name other sessions)",
                returncode=2)
        if run.status != RunStatus.DONE:
            self.stderr.write(f"audit {audit_id} is {run.get_status_display().lower()}: the "
                              f"figures cover the {run.sessions_done} of {run.sessions_total} "
                              "sessions audited so far")
        if format == "json":
            self.stdout.write(json.dumps(self._document(run, rows), ensure_ascii=False))
        else:
            self.stdout.write(self._table(run, rows), ending="")

    def _document(self, run: AuditRun, rows: report.AgreementTable) -> dict:
        return {"audit": run.pk, "status": run.status,
                "rules": [{"rule": r.rule, "rule_version": r.rule_version,
                           "rule_version_id": r.rule_version_id,
                           **r.counts.as_dict(), "audited": r.audited,
                           "labels_outside_run": r.outside} for r in rows],
                "overall": rows.overall.as_dict()}

    def _table(self, run: AuditRun, rows: report.AgreementTable) -> str:
        text = quality.ratio_text
        overall = rows.overall
        lines = [COLUMNS]
        for r in rows:
            c = r.counts
            lines.append((r.rule, c.labelled, r.audited, c.tp, c.fp, c.fn, c.tn,
                          text(c.precision), text(c.recall), text(c.f1), r.outside))
        c = overall.counts
        lines.append(("Overall (micro-average)", c.labelled, overall.audited, c.tp, c.fp, c.fn,
                      c.tn, text(c.precision), text(c.recall), text(c.f1), overall.outside))
        figures = overall.figures
        lines.append(("Mean over rules (macro-average)", "", "", "", "", "", "",
                      text(figures.macro_precision.value), text(figures.macro_recall.value),
                      text(figures.macro_f1.value), ""))
        cells = [[str(value) for value in line] for line in lines]
        widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
        out = [(f"Audit {run.pk}: agreement with ground truth over {figures.rules} "
                f"rule{'' if figures.rules == 1 else 's'} with labels")]
        for row in cells:
            # Names to the left, figures to the right.
            out.append("  ".join([row[0].ljust(widths[0])]
                                 + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])])
                       .rstrip())
        out.append("")
        out.append("A session counts as found violating when its verdict at the end is "
                   "violated; only labelled sessions count. Micro-average: the counts summed "
                   "over rules. Macro-average: the plain mean of the rules' own figures, each "
                   "over the rules where it is defined (precision: "
                   f"{figures.macro_precision.rules}, recall: {figures.macro_recall.rules}, "
                   f"F1: {figures.macro_f1.rules}). {quality.UNDEFINED} marks a ratio with "
                   "nothing to divide by.")
        return "\n".join(out) + "\n"
