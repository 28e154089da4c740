"""`manage.py reindex [--kind K] [--check] [--keywords-only]`: rebuild or check the indexes."""

import sys
import time

from django.core.management.base import BaseCommand, CommandError, CommandParser

from retrieval.embedders import get_embedder
from retrieval.models import Kind
from retrieval.reindex import Progress, check, reindex

BAR = 30


def bar(p: Progress) -> str:
    share = p.done / p.total if p.total else 1.0
    filled = int(share * BAR)
    eta = "--:--" if p.eta is None else time.strftime("%M:%S", time.gmtime(p.eta))
    if p.eta and p.eta >= 3600:
        eta = f"{p.eta / 3600:.1f}h"
    return (
        f"[{'#' * filled}{'-' * (BAR - filled)}] {p.done}/{p.total} {share:4.0%} "
        f"{p.rate:6.1f} items/s  ETA {eta}"
    )


class Command(BaseCommand):
    help = (
        "Bring the keyword (FTS5) and vector indexes up to date: only what changed is redone, "
        "so an interrupted run resumes where it stopped. After switching embedding models it "
        "empties the vectors and embeds everything again with the new model. --check only "
        "reports items missing from or stale in either index (exit code 1 if any)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kind", choices=Kind.values, help="Only this kind of item.")
        parser.add_argument("--check", action="store_true", help="Report, change nothing.")
        parser.add_argument(
            "--keywords-only", action="store_true", help="Skip vectors (no embedder needed)."
        )
        parser.add_argument("--batch", type=int, default=64, help="Items per committed batch.")

    def handle(self, *args, kind=None, check=False, keywords_only=False, batch=64, **options):
        if check:
            return self._check(kind)
        self.stdout.write(
            f"Embedding model: {get_embedder().name}"
            if not keywords_only
            else "Keywords only (vectors untouched)."
        )
        tty = getattr(self.stderr, "isatty", lambda: False)()
        last = [0.0]

        def progress(p: Progress) -> None:
            now = time.monotonic()
            if tty:
                self.stderr.write("\r" + bar(p), ending="")
                self.stderr.flush()
            elif now - last[0] >= 2 or p.done == p.total:  # a log file gets a line every 2 s
                last[0] = now
                self.stderr.write(bar(p))

        try:
            summary = reindex(
                kind,
                embed=not keywords_only,
                reset_model=True,
                batch=max(1, batch),
                progress=progress,
            )
        except KeyboardInterrupt:
            self.stderr.write("")
            raise CommandError(
                "Interrupted. Everything committed so far is kept: run the same command again "
                "to resume."
            ) from None
        if tty:
            self.stderr.write("")
        if summary.reset:
            self.stdout.write("The vector index was emptied for the new embedding model.")
        self.stdout.write(
            self.style.SUCCESS(
                f"Examined {summary.examined} items: {summary.done} (re)indexed, "
                f"{summary.removed} vanished items removed."
            )
        )
        if summary.embed_error:
            raise CommandError(
                f"Keywords are indexed, but embedding failed: {summary.embed_error}. "
                "Search runs on keywords for the items without vectors; run again later."
            )

    def _check(self, kind):
        report = check(kind)
        rows = [
            (
                "kind",
                "items",
                "missing",
                "stale kw",
                "stale filters",
                "no vector",
                "stale vec",
                "orphans",
            )
        ]
        for k in report.kinds:
            rows.append(
                (
                    k.kind,
                    k.items,
                    k.missing,
                    k.stale_keywords,
                    k.stale_filters,
                    k.missing_vectors,
                    k.stale_vectors,
                    k.orphans,
                )
            )
        widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
        for row in rows:
            self.stdout.write("  ".join(str(v).rjust(w) for v, w in zip(row, widths, strict=True)))
        if not report.vector_ok:
            self.stdout.write(f"Vectors unusable: {report.vector_reason}")
        if report.stray_keyword_rows or report.stray_vector_rows:
            self.stdout.write(
                f"Rows without an item: {report.stray_keyword_rows} keyword, "
                f"{report.stray_vector_rows} vector"
            )
        if report.problems:
            self.stdout.write(
                self.style.WARNING(
                    f"{report.problems} problems: run `python manage.py reindex` to fix them."
                )
            )
            sys.exit(1)
        self.stdout.write(self.style.SUCCESS("Both indexes are up to date."))
