"""`manage.py import_chats PATH --format chatgpt|claude|jsonl`: import chat history."""

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lifecycle import chat_formats, chat_import, tasks
from lifecycle.chat_formats import ImportRefused
from lifecycle.models import ChatImport, ImportStatus


class Command(BaseCommand):
    help = (
        "Import conversations from ChatGPT's export (conversations.json or its zip), Claude's "
        "export, or a JSONL file of turns (one per line: session_id, role, content, timestamp, "
        "tool_calls?, tool_results?, turn_index?, title?). Prints a preview, then stores every "
        "conversation with its original times; extraction and episodes are queued for the "
        "task consumer as for live sessions. A bad file is refused with nothing stored; the "
        "same file again adds nothing; after an interruption, run it again to resume."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="conversations.json, the export's .zip, or a .jsonl file")
        parser.add_argument("--format", required=True, choices=chat_formats.FORMATS, dest="fmt")
        parser.add_argument("--progress", action="store_true", help="Print progress as it goes.")
        parser.add_argument("--dry-run", action="store_true", help="Only show the preview.")

    def handle(self, *args, path: str, fmt: str, progress: bool, dry_run: bool, **options):
        try:
            job = chat_import.prepare(path, fmt)
        except ImportRefused as exc:
            raise CommandError(f"Refused, nothing imported: {exc}") from exc
        self._preview(job)
        if dry_run:
            self.stdout.write("Preview only; nothing imported.")
            return
        running = (ImportStatus.RUNNING, ImportStatus.CANCELLING)
        if job.status in running and not chat_import.interrupted(job):
            raise CommandError(
                f"This file is being imported already (import #{job.pk}, started on the Import "
                "history page); follow it there."
            )
        if job.position:
            self.stdout.write(
                f"Resuming: {job.position} of {job.conversations} conversations were stored."
            )
        chat_import.queue(job)
        try:
            job = chat_import.run(
                job.pk,
                finish_session=tasks.end_imported_session,
                batches=tasks.queue_turn_batch,
                progress=self._progress if progress else None,
            )
        except KeyboardInterrupt:
            job = ChatImport.objects.get(pk=job.pk)
            raise CommandError(
                f"Interrupted after {job.position} of {job.conversations} conversations; "
                "run the same command again to resume."
            ) from None
        if progress:
            self.stderr.write("")
        self._report(job)

    def _preview(self, job: ChatImport) -> None:
        p = job.preview
        languages = ", ".join(f"{k} {v}" for k, v in p.get("languages", {}).items())
        self.stdout.write(
            f"{p['conversations']} conversations, {p['turns']} turns "
            f"({p['first'][:10]} to {p['last'][:10]}); languages: {languages}; "
            f"{p['tool_turns']} with tool calls or results"
        )
        self.stdout.write(f"Already stored: {p['already']} turns; new: {p['new']}.")
        for row in p.get("masked", []):
            self.stdout.write(f"Guardrail “{row['rule']}” will mask {row['turns']} turn(s).")
        for row in p.get("blocked", []):
            self.stdout.write(
                f"Guardrail “{row['rule']}” will block memories from {row['turns']} turn(s)."
            )

    def _progress(self, job: ChatImport) -> None:
        self.stderr.write(
            f"\r{chat_import.percent(job):3d}%  {job.position}/{job.conversations} conversations,"
            f" {job.turns_done}/{job.turns} turns ({job.turns_added} added)",
            ending="",
        )
        self.stderr.flush()

    def _report(self, job: ChatImport) -> None:
        if job.status == ImportStatus.FAILED:
            raise CommandError(
                f"Failed after {job.position} of {job.conversations} conversations: {job.error}."
                " Run the same command again to resume."
            )
        if job.status == ImportStatus.CANCELLED:
            self.stdout.write(f"Cancelled after {job.position} conversations.")
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {job.conversations} conversations: {job.turns_added} turns added, "
                f"{job.turns_done - job.turns_added - job.turns_differing} already there"
                + (
                    f", {job.turns_differing} differing (kept as stored)"
                    if job.turns_differing
                    else ""
                )
                + "."
            )
        )
        if job.turns_added:
            self.stdout.write(
                "Extraction and episodes are queued: the task consumer (make run) does them."
            )
