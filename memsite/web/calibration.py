"""The Calibration page: each source's confidence against the person's answers, and its
thresholds (curator.calibration; changes through the write path, undoable).

The chart is inline SVG built here: per confidence bucket, one bar for the review items
(confirmed as they were / edited / ignored) and one for the automatic writes (kept /
corrected / deleted), each as shares of 100 %, with its count above it. No script.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from curator import calibration
from curator import writepath as wp
from curator.models import Owner
from curator.thresholds import defaults
from memsite.web.common import done_banner
from memsite.web.forms import ThresholdForm
from memsite.web.render import render_page

WIDTH, HEIGHT, TOP, BOTTOM = 520, 170, 16, 20
# One colour per outcome, six in all (Okabe-Ito, told apart with colour-blindness too): the
# review outcomes warm-to-green, the automatic writes in blues and purple.
COLORS = {
    "confirmed": "#009e73",
    "edited": "#e69f00",
    "ignored": "#d55e00",
    "kept": "#0072b2",
    "corrected": "#56b4e9",
    "deleted": "#cc79a7",
}


def _labels() -> dict[str, str]:
    return {
        "confirmed": _("confirmed as it was"),
        "edited": _("confirmed after editing"),
        "ignored": _("ignored"),
        "kept": _("written, left alone"),
        "corrected": _("written, corrected later"),
        "deleted": _("written, deleted later"),
    }


def _bar(x: float, width: float, counts: dict, order: tuple, labels: dict, bucket: str) -> str:
    total = sum(counts[o] for o in order)
    area = HEIGHT - TOP - BOTTOM
    parts = [f'<text x="{x + width / 2:.1f}" y="{TOP - 4}" class="n">{total}</text>']
    if not total:
        y = HEIGHT - BOTTOM - 1
        return (
            "".join(parts)
            + f'<rect class="none" x="{x:.1f}" y="{y}" width="{width:.1f}" height="1"/>'
        )
    y = HEIGHT - BOTTOM
    for outcome in order:
        if not counts[outcome]:
            continue
        h = area * counts[outcome] / total
        y -= h
        tip = f"{bucket}: {labels[outcome]} {counts[outcome]} / {total}"
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{h:.1f}" '
            f'fill="{COLORS[outcome]}"><title>{escape(tip)}</title></rect>'
        )
    return "".join(parts)


def chart(source: calibration.SourceReport) -> SafeString:
    """One pair of 100 % bars per bucket: review answers, then automatic writes."""
    labels, buckets = _labels(), source.shown
    slot = WIDTH / max(len(buckets), 1)
    bar = slot * 0.32
    review_order = ("confirmed", "edited", "ignored")
    auto_order = ("kept", "corrected", "deleted")
    body = []
    for n, b in enumerate(buckets):
        x = n * slot + slot * 0.12
        review = {o: b.review[o] for o in review_order}
        auto = {o: b.auto[o] for o in auto_order}
        body.append(_bar(x, bar, review, review_order, labels, b.label))
        body.append(_bar(x + bar + slot * 0.04, bar, auto, auto_order, labels, b.label))
        body.append(
            f'<text x="{n * slot + slot / 2:.1f}" y="{HEIGHT - 5}" class="axis-label">'
            f"{escape(b.label)}</text>"
        )
    title = escape(_("Answers per confidence bucket: %(source)s") % {"source": source.label})
    return mark_safe(
        f'<svg class="calibration-chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="{title}">'
        f'<line class="axis" x1="0" y1="{HEIGHT - BOTTOM + 0.5}" x2="{WIDTH}" '
        f'y2="{HEIGHT - BOTTOM + 0.5}"/>' + "".join(body) + "</svg>"
    )


@require_GET
def calibration_page(request: HttpRequest) -> HttpResponse:
    reports = calibration.report(Owner.default())
    rows = [{"source": s, "chart": chart(s)} for s in reports]
    context = {
        "with_history": [r for r in rows if r["source"].items],
        "without_history": [r for r in rows if not r["source"].items],
        "defaults": defaults(),
        "target": round(calibration.TARGET * 100),
        "min_decisions": calibration.MIN_DECISIONS,
        "legend": [(COLORS[k], v) for k, v in _labels().items()],
        "banner": done_banner(request),
    }
    return render_page(request, "curator/calibration.html", context)


@require_POST
def set_threshold(request: HttpRequest) -> HttpResponse:
    """Store (or clear) a source's thresholds; the banner after it offers the undo."""
    form = ThresholdForm(request.POST)
    back = reverse("calibration")
    if not form.is_valid():
        for field, errors in form.errors.items():
            label = form.fields[field].label if field in form.fields else ""
            messages.error(request, f"{label}: {' '.join(errors)}" if label else " ".join(errors))
        return redirect(back)
    data = form.cleaned_data
    try:
        event = wp.set_threshold(data["source"], write=data["write"], pending=data["pending"])
    except wp.WritePathError as exc:
        messages.error(request, str(exc))
        return redirect(back)
    if event is None:
        messages.info(request, _("Nothing needed to change."))
        return redirect(back)
    return redirect(f"{back}?done={event.pk}")
