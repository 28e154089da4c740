"""Automatic backups: made at their time, verified by a real dry restore, rotated, reported,
and restored into a new data dir (never over the live one)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from curator.models import Fact, Owner
from lifecycle import schedule, tasks
from lifecycle.backup import nightly
from tests.archive_helpers import assert_same_records

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    settings.MEMORY_DIR = tmp_path / "data" / "memory"
    settings.MEDIA_ROOT = tmp_path / "data" / "attachments"
    settings.TIME_ZONE = "Asia/Shanghai"
    settings.BACKUP_TIME = "02:30"
    Fact.objects.create(owner=Owner.default(), content="用户住在杭州")
    return tmp_path


def move_clock(monkeypatch, moment: datetime) -> None:
    monkeypatch.setattr(timezone, "now", lambda: moment)


def night(day: int) -> datetime:
    """02:30 in Shanghai on the given day of March 2026 (a Sunday is the 1st)."""
    return datetime(2026, 3, day, 2, 30, tzinfo=ZoneInfo("Asia/Shanghai"))


def test_the_nightly_backup_runs_at_its_time_and_is_verified_by_a_real_restore(
    client_in, monkeypatch
):
    check = schedule.check_for("nightly_backup")
    utc = night(2).astimezone(ZoneInfo("UTC")).replace(tzinfo=None)  # as Huey hands it
    assert check(utc) and not check(utc + timedelta(minutes=1))
    move_clock(monkeypatch, night(2))
    tasks.nightly_backup.call_local()
    (backup,) = nightly.backups()
    assert backup.good and backup.size > 0 and backup.path.parent == settings.DATA_DIR / "backups"
    assert not list(backup.path.parent.glob(".verify-*"))  # the scratch install is gone
    health = client_in.get("/api/v1/health").json()
    assert health["status"] == "ok" and health["backup"]["state"] == "ok"
    assert health["backup"]["last_good_at"].startswith("2026-03-01T18:30")  # 02:30 +08:00
    assert "data-backup=" not in client_in.get(reverse("home")).content.decode()
    jobs = client_in.get(reverse("jobs")).content.decode()
    assert f'data-backup="{backup.name}"' in jobs and 'data-verified="yes"' in jobs

    # Three days on without a backup: the home page and /health say so.
    move_clock(monkeypatch, night(5))
    assert 'data-backup="stale"' in client_in.get(reverse("home")).content.decode()
    assert client_in.get("/api/v1/health").json()["backup"]["state"] == "stale"


def test_a_corrupted_backup_is_reported_on_the_home_page_and_by_health(client_in, monkeypatch):
    monkeypatch.setattr(nightly, "_in_child", lambda *a, **k: "")  # the zip check comes first
    backup = nightly.make()
    assert backup.good
    with zipfile.ZipFile(backup.path) as zf:
        member = max(zf.infolist(), key=lambda i: i.compress_size)
    data = bytearray(backup.path.read_bytes())
    start = member.header_offset + 30 + len(member.filename.encode()) + len(member.extra)
    data[start + member.compress_size // 2] ^= 0xFF  # one flipped byte in the largest member
    backup.path.write_bytes(bytes(data))
    with pytest.raises(CommandError, match="does not restore"):
        call_command("backups", "verify", backup.name)
    home = client_in.get(reverse("home")).content.decode()
    assert 'data-backup="failed"' in home
    health = client_in.get("/api/v1/health").json()
    assert health["status"] == "degraded" and health["backup"]["state"] == "failed"
    assert "backup" in health["degraded_reason"]
    assert 'data-verified="no"' in client_in.get(reverse("jobs")).content.decode()


def test_rotation_keeps_seven_daily_and_four_weekly_backups(monkeypatch):
    """Forty nights with the clock moved forward each time. The dry restore runs in a child
    process (the test above); here it is left out to keep forty nights quick."""
    monkeypatch.setattr(nightly, "_in_child", lambda *a, **k: "")
    start = datetime(2026, 3, 2, 2, 30, tzinfo=ZoneInfo("Asia/Shanghai"))  # a Monday
    for n in range(40):
        move_clock(monkeypatch, start + timedelta(days=n))
        assert nightly.make().good
    kept = sorted(
        b.created_at.astimezone(ZoneInfo("Asia/Shanghai")).date() for b in nightly.backups()
    )
    last = (start + timedelta(days=39)).date()
    daily = [last - timedelta(days=n) for n in range(7)]
    assert set(daily) <= set(kept)
    # the newest of each of the last four weeks: Sundays before this (partial) week
    weekly = [d for d in kept if d not in daily]
    assert len(weekly) <= 4 and all(d.isoweekday() == 7 for d in weekly)
    assert len(kept) == len(set(kept)) and len(kept) <= 11
    files = sorted(p.name for p in (settings.DATA_DIR / "backups").iterdir())
    assert len(files) == 2 * len(kept)  # each zip with its record, nothing else left


def test_a_failed_backup_stays_listed_until_a_later_one_succeeds(monkeypatch):
    monkeypatch.setattr(nightly, "_in_child", lambda *a, **k: "")
    move_clock(monkeypatch, night(2))
    assert nightly.make().good

    def full_disk(target):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(nightly.export, "export", full_disk)
        move_clock(monkeypatch, night(3))
        failed = nightly.make()
    assert failed.verified is False and "No space left" in failed.error
    assert nightly.status().state == "failed"
    move_clock(monkeypatch, night(4))
    nightly.make()
    assert [b.verified for b in nightly.backups()] == [True, True]
    assert nightly.status().state == "ok"


def test_restore_refuses_the_live_data_dir_and_a_folder_with_files(tmp_path, monkeypatch):
    monkeypatch.setattr(nightly, "_in_child", lambda *a, **k: "")
    backup = nightly.make()
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("x")
    for into in (settings.DATA_DIR, settings.DATA_DIR / "inside", tmp_path / "used"):
        with pytest.raises(CommandError, match="new, empty folder"):
            call_command("backups", "restore", backup.name, "--into", str(into))


def export_of(data_dir, path) -> None:
    """`manage.py export` run as the person would, on the restored data dir."""
    env = {**os.environ, "MEMSITE_DATA_DIR": str(data_dir)}
    env["DJANGO_SETTINGS_MODULE"] = "memsite.settings"
    manage = settings.BASE_DIR / "manage.py"
    subprocess.run([sys.executable, manage, "export", str(path)], env=env, check=True)


def test_the_settings_page_restores_a_backup_into_a_new_data_dir(client_in, tmp_path):
    backup = nightly.make()
    assert backup.good
    page = client_in.get(reverse("settings")).content.decode()
    assert f'value="{backup.name}"' in page
    into = tmp_path / "restored"
    response = client_in.post(
        reverse("backup_restore"), {"name": backup.name, "into": str(into)}, follow=True
    )
    text = response.content.decode()
    assert f"MEMSITE_DATA_DIR={into}" in text
    again = tmp_path / "again.zip"
    export_of(into, again)
    assert_same_records(backup.path, again)
    refused = client_in.post(
        reverse("backup_restore"),
        {"name": backup.name, "into": str(settings.DATA_DIR)},
        follow=True,
    )
    assert "never restored over the data folder in use" in refused.content.decode()
