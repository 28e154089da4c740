"""API: confidence calibration per source (curator.calibration, as on the Calibration page)."""

from ninja import Field, Router, Schema

from curator import calibration
from curator.thresholds import defaults
from memsite.api.common import AUTH_ERRORS, owner

router = Router(tags=["calibration"])


class BucketOut(Schema):
    range: list[float] = Field(description="[low, high) of the confidence (0.9-1.0 includes 1).")
    review: dict[str, int] = Field(description="Review items: confirmed, edited, ignored, open.")
    reviewed: int
    confirmed_share: float | None = Field(description="Of the answered review items.")
    edited_share: float | None
    ignored_share: float | None
    automatic: dict[str, int] = Field(
        description="Written without review: kept, corrected, deleted."
    )
    written: int
    corrected_share: float | None
    deleted_share: float | None


class SourceOut(Schema):
    source: str = Field(description='"token:<id>" for an API token (an agent), else the extractor.')
    label: str
    token_id: int | None
    thresholds: dict[str, float | bool] = Field(
        description="write, pending in use; custom: set here."
    )
    buckets: list[BucketOut]
    suggestion: dict[str, float | int] | None = Field(
        description="write: the suggested write threshold (1.0: review everything), with how many "
        "of the answered items at or above it were right."
    )


class CalibrationOut(Schema):
    defaults: dict[str, float]
    target: float
    min_decisions: int
    sources: list[SourceOut]


@router.get(
    "/calibration",
    response={200: CalibrationOut, **AUTH_ERRORS},
    summary="How each source's confidence compares with the person's answers, per bucket",
)
def get_calibration(request):
    limits = defaults()
    return {
        "defaults": {"write": limits.write, "pending": limits.pending},
        "target": calibration.TARGET,
        "min_decisions": calibration.MIN_DECISIONS,
        "sources": [s.to_dict() for s in calibration.report(owner())],
    }
