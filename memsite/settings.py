"""One settings file: everything comes from MEMSITE_* environment variables with local defaults."""

import importlib.util
import os
import secrets
import tempfile
from pathlib import Path

import platformdirs
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from memsite.core.env import env, env_bool, env_float, env_int


def _default_data_dir(base: Path, in_checkout: bool) -> str:
    if in_checkout:
        return str(base / "data")
    # e.g. ~/.local/share/memory-curator, ~/Library/Application Support/memory-curator
    return platformdirs.user_data_dir("memory-curator", appauthor=False)


BASE_DIR = Path(__file__).resolve().parent.parent
# A git checkout (manage.py beside the packages) keeps its data in ./data; an installed app
# (pipx, a wheel) has BASE_DIR = site-packages and uses the platform's user data directory.
IN_CHECKOUT = (BASE_DIR / "manage.py").is_file()
DATA_DIR = Path(env("MEMSITE_DATA_DIR") or _default_data_dir(BASE_DIR, IN_CHECKOUT))
DATA_DIR = DATA_DIR.expanduser().resolve()
# Templates, static files and translations: beside the packages in a checkout; bundled into
# memsite/_bundled by the wheel build (setup.py) when installed.
ASSETS_DIR = BASE_DIR if IN_CHECKOUT else Path(__file__).resolve().parent / "_bundled"


def _prepare_data_dir(path: Path) -> None:
    """Fail early, in one sentence, when the data directory cannot hold our files."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        # A probe of its own: processes starting together (web, consumer) removed each
        # other's shared one, and the loser's settings failed to load.
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise ImproperlyConfigured(
            f"The data directory {path} is not writable ({exc.strerror}); "
            "set MEMSITE_DATA_DIR to a folder you can write to."
        ) from exc


def _secret_key(path: Path) -> str:
    """Use MEMSITE_SECRET_KEY, else a key generated once and kept in the data dir (never in git)."""
    if env("MEMSITE_SECRET_KEY"):
        return env("MEMSITE_SECRET_KEY")
    key_file = path / "secret_key"
    if not key_file.exists():
        # Written aside, then linked into place: the link fails if another process starting
        # at the same moment made the key first, and nobody ever reads a half-written key.
        with tempfile.NamedTemporaryFile("w", dir=path, prefix=".secret_key-") as tmp:
            tmp.write(secrets.token_urlsafe(50))
            tmp.flush()
            os.chmod(tmp.name, 0o600)
            try:
                os.link(tmp.name, key_file)
            except FileExistsError:
                pass
    return key_file.read_text().strip()


_prepare_data_dir(DATA_DIR)
SECRET_KEY = _secret_key(DATA_DIR)
DEBUG = env_bool("MEMSITE_DEBUG", False)
HOST = env("MEMSITE_HOST", "127.0.0.1")
PORT = env_int("MEMSITE_PORT", 8000)
ALLOWED_HOSTS = [
    h for h in env("MEMSITE_ALLOWED_HOSTS", f"127.0.0.1,localhost,{HOST}").split(",") if h
]
CSRF_TRUSTED_ORIGINS = [f"http://{h}:{PORT}" for h in ALLOWED_HOSTS]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "huey.contrib.djhuey",
    "memsite",
    "curator",
    "retrieval",
    "lifecycle",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "memsite.web.middleware.PagesLoginRequiredMiddleware",
    "memsite.web.middleware.HtmxMessagesMiddleware",
]

ROOT_URLCONF = "memsite.urls"
WSGI_APPLICATION = "memsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [ASSETS_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memsite.web.navigation.navigation",
            ],
        },
    }
]

# The custom backend loads sqlite-vec into every connection (see memsite/db/base.py).
DATABASES = {
    "default": {
        "ENGINE": "memsite.core.db",
        # MEMSITE_DATABASE_FILE: a job's child process opens its parent's file (core/childjob).
        "NAME": Path(env("MEMSITE_DATABASE_FILE") or DATA_DIR / "memory.sqlite3"),
        "OPTIONS": {
            "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL;"
            "PRAGMA busy_timeout=5000;PRAGMA foreign_keys=ON",
            "transaction_mode": "IMMEDIATE",
        },
        "TEST": {"NAME": DATA_DIR / "test-memory.sqlite3"},
        # Keep each thread's connection: opening one loads sqlite-vec and registers Django's
        # SQL functions, which cost more than a whole POST /turns (measured in bench/api.py).
        "CONN_MAX_AGE": env_int("MEMSITE_DB_CONN_MAX_AGE", 600),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = env("MEMSITE_LANGUAGE", "en")
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [ASSETS_DIR / "locale"]
TIME_ZONE = env("MEMSITE_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [ASSETS_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns on every request when it is missing
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
MEDIA_ROOT = DATA_DIR / "attachments"
MEMORY_DIR = DATA_DIR / "memory"
CACHE_DIR = DATA_DIR / "cache"

# Huey: a SQLite queue file beside the database; tests run tasks inline.
HUEY = {
    "huey_class": "memsite.core.queue.MemsiteHuey",
    "name": "memsite",
    "filename": str(DATA_DIR / "huey.sqlite3"),
    "immediate": env_bool("MEMSITE_HUEY_IMMEDIATE", False),
    "consumer": {"workers": 2, "worker_type": "thread"},
}
# The consumer's niceness: its jobs take the CPU the web processes leave (docs/operations.md).
CONSUMER_NICENESS = env_int("MEMSITE_CONSUMER_NICENESS", 10)
# From this many active facts, the jobs that read them all (the contradiction scan, the
# nightly consolidation) run in a child process, which takes their memory with it when it
# ends (lifecycle/largejobs.py); below, in the consumer (a child costs a few seconds). 0: always.
JOBS_CHILD_PROCESS_FACTS = env_int("MEMSITE_JOBS_CHILD_PROCESS_FACTS", 20000)

# Write-path routing (seed 000 section 6): >= write, between = pending, below = drop.
CONFIDENCE_WRITE = env_float("MEMSITE_CONFIDENCE_WRITE", 0.85)
CONFIDENCE_PENDING = env_float("MEMSITE_CONFIDENCE_PENDING", 0.60)
if not 0 <= CONFIDENCE_PENDING <= CONFIDENCE_WRITE <= 1:
    raise ImproperlyConfigured(
        "MEMSITE_CONFIDENCE_PENDING must be at most MEMSITE_CONFIDENCE_WRITE, both between 0 and 1."
    )

# Optional OpenAI-compatible endpoints; the standard OPENAI_* variables are fallbacks.
LLM_BASE_URL = env("MEMSITE_LLM_BASE_URL", env("OPENAI_BASE_URL"))
LLM_API_KEY = env("MEMSITE_LLM_API_KEY", env("OPENAI_API_KEY"))
LLM_MODEL = env("MEMSITE_LLM_MODEL")
EMBEDDING_BASE_URL = env("MEMSITE_EMBEDDING_BASE_URL", env("OPENAI_BASE_URL"))
EMBEDDING_API_KEY = env("MEMSITE_EMBEDDING_API_KEY", env("OPENAI_API_KEY"))
EMBEDDING_MODEL = env("MEMSITE_EMBEDDING_MODEL")
EMBEDDING_DIM = env_int("MEMSITE_EMBEDDING_DIM", 0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("MEMSITE_LOG_LEVEL", "INFO")},
    # run_huey attaches its own handler to "huey"; propagating would print every line twice.
    "loggers": {
        "jieba": {"level": "WARNING"},
        "huey": {"propagate": False},
        # The MCP SDK logs every stateless request's start and end at INFO.
        "mcp": {"level": "WARNING"},
    },
}

# Cards and onboarding (issue 7): the persona + user cards injected into every turn share this
# token budget (seed 000 section 5); an LLM compiles them when LLM_BASE_URL and LLM_MODEL are set.
CARDS_TOKEN_BUDGET = env_int("MEMSITE_CARDS_TOKEN_BUDGET", 600)
# Live cards (issue 19): seconds after the last change of a fact before MEMORY.md and User.md
# are refreshed (a burst of changes gives one refresh).
CARDS_REFRESH_DELAY = env_float("MEMSITE_CARDS_REFRESH_DELAY", 3.0)

# API (issue 5): body and attachment limits (413), requests per minute per token (429; 0 = no
# limit). "ninja" is installed so its docs page uses the bundled Swagger UI, never a CDN; the
# middleware turns every error under /api/ (unknown paths included) into JSON.
API_MAX_BODY_BYTES = env_int("MEMSITE_API_MAX_BODY_BYTES", 1024 * 1024)
API_ATTACHMENT_MAX_BYTES = env_int("MEMSITE_API_ATTACHMENT_MAX_BYTES", 20 * 1024 * 1024)
API_RATE_LIMIT = env_int("MEMSITE_API_RATE_LIMIT", 600)
INSTALLED_APPS += ["ninja"]
MIDDLEWARE.insert(0, "memsite.api.errors.ApiErrorMiddleware")  # outermost: sees every error

# Lifecycle (issue 6): extraction frequency, the embedding retry queue, the nightly
# consolidation and its thresholds. Importance is on the write path's 0-1 scale.
EXTRACT_LLM_MIN_CHARS = env_int("MEMSITE_EXTRACT_LLM_MIN_CHARS", 30)  # CJK characters count 2
EXTRACT_LLM_PER_SESSION = env_int("MEMSITE_EXTRACT_LLM_PER_SESSION", 5)
EXTRACT_MAX_ATTEMPTS = env_int("MEMSITE_EXTRACT_MAX_ATTEMPTS", 4)
EXTRACT_RELATED = env_int("MEMSITE_EXTRACT_RELATED", 8)  # existing memories shown to the LLM
LLM_TIMEOUT = env_float("MEMSITE_LLM_TIMEOUT", 60.0)
EMBED_BACKOFF = [
    float(s) for s in env("MEMSITE_EMBED_BACKOFF", "1,4,16,64,256").split(",") if s.strip()
]
CONSOLIDATE_HOUR = env_int("MEMSITE_CONSOLIDATE_HOUR", 3)  # local time in TIME_ZONE
# Automatic backups into DATA_DIR/backups/ (lifecycle/backup/nightly.py): on by default, at
# BACKUP_TIME local time; the newest of each of the last 7 days and 4 weeks are kept.
BACKUPS_ENABLED = env_bool("MEMSITE_BACKUPS", True)
BACKUP_TIME = env("MEMSITE_BACKUP_TIME", "02:30")
BACKUP_KEEP_DAILY = env_int("MEMSITE_BACKUP_KEEP_DAILY", 7)
BACKUP_KEEP_WEEKLY = env_int("MEMSITE_BACKUP_KEEP_WEEKLY", 4)
# Unset: 0.9 (seed 002) for a remote embedding model, 0.97 for the bundled e5, whose cosine
# range is compressed (unrelated facts of the same shape often score above 0.9).
DEDUP_THRESHOLD = env_float("MEMSITE_DEDUP_THRESHOLD", 0) or None
DEDUP_MAX_PROPOSALS = env_int("MEMSITE_DEDUP_MAX_PROPOSALS", 50)
ARCHIVE_BELOW = env_float("MEMSITE_ARCHIVE_BELOW", 0.1)
DEMOTE_BELOW = env_float("MEMSITE_DEMOTE_BELOW", 0.3)
REVIEW_BELOW = env_float("MEMSITE_REVIEW_BELOW", 0.35)
PROMOTE_AT = env_float("MEMSITE_PROMOTE_AT", 0.9)
ATTACHMENT_RETENTION_DAYS = env_int("MEMSITE_ATTACHMENT_RETENTION_DAYS", 0)  # 0 = keep files
# Contradictions (issue 22): after writes, one scan per this many seconds (coalesced); the LLM,
# when configured, judges at most this many pairs the rules leave undecided per scan.
CONTRADICTIONS_DELAY = max(1, env_int("MEMSITE_CONTRADICTIONS_DELAY", 60))
# "Delete for good" from a fact's page: the fact is deleted at once (undoable) and removed for
# good, text in the log included, this many minutes later unless the person undoes it.
PURGE_DELAY_MINUTES = max(1, env_int("MEMSITE_PURGE_DELAY_MINUTES", 10))
CONTRADICTIONS_LLM_PAIRS = env_int("MEMSITE_CONTRADICTIONS_LLM_PAIRS", 20)

# Retrieval (issue 4): search defaults chosen by measurement (docs/retrieval.md), the
# embedder's batching and timeout, context assembly budgets (seed 000 section 5), recall log.
# Processes serving HTTP on one socket (manage.py serve): one per core by default, each with
# its own interpreter lock (issue 33). They share the vector file (retrieval/matrix.py), the
# rate limit (memsite/api/ratelimit.py) and jieba's dictionary (loaded before they fork);
# each holds its own keyword postings. Measured in bench/api.py.
WEB_PROCESSES = max(
    1,
    env_int(
        "MEMSITE_WEB_PROCESSES",
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
    ),
)
# Request threads in each of them. Two: with one GIL, more only fight over it (8 -> 4 took
# /search p95 from 465 to 276 ms in bench/api.py), and a slow request (an export, an upload,
# a wait on the write lock, a streamed answer) still leaves the process another thread.
WEB_THREADS = max(1, env_int("MEMSITE_WEB_THREADS", 2))
# The HTTP server: gunicorn (gthread workers) where it runs (Linux, macOS), else waitress
# (Windows), which `serve` forks itself for several processes where it can.
WEB_SERVER = env(
    "MEMSITE_WEB_SERVER",
    "gunicorn" if importlib.util.find_spec("gunicorn") and os.name == "posix" else "waitress",
)
SEARCH_PRESET = env("MEMSITE_SEARCH_PRESET", "curator")
SEARCH_TOP_K = env_int("MEMSITE_SEARCH_TOP_K", 50)  # candidates per channel
SEARCH_EXACT_MAX = env_int("MEMSITE_SEARCH_EXACT_MAX", 5000)  # above: bit scan + rescoring
SEARCH_OVERSAMPLE = env_float("MEMSITE_SEARCH_OVERSAMPLE", 2.0)
# Vectors are also held in memory by each searching process (retrieval/matrix.py; 1.9 KB a
# vector with its int8 copy): KNN 4-6x faster than sqlite-vec's scan. False: sqlite-vec only.
SEARCH_VECTOR_MATRIX = env_bool("MEMSITE_SEARCH_VECTOR_MATRIX", True)
# The keyword index's postings too (retrieval/keywords.py; about 0.5 KB an item): FTS5's own
# BM25 ranking, 7-13x faster at p95. False: FTS5 ranks every query itself.
SEARCH_KEYWORD_INDEX = env_bool("MEMSITE_SEARCH_KEYWORD_INDEX", True)
# From this many documents, keyword queries leave out their commonest terms (backends.prune_terms).
SEARCH_PRUNE_MIN_DOCS = env_int("MEMSITE_SEARCH_PRUNE_MIN_DOCS", 50_000)
# ... any term found in more than this share of the documents (unless it is the rarest asked).
SEARCH_PRUNE_SHARE = env_float("MEMSITE_SEARCH_PRUNE_SHARE", 0.2)
if not 0 < SEARCH_PRUNE_SHARE <= 1:
    raise ImproperlyConfigured("MEMSITE_SEARCH_PRUNE_SHARE must be above 0 and at most 1.")
SEARCH_STATE_TTL = env_float("MEMSITE_SEARCH_STATE_TTL", 2.0)  # s; see indexing.search_space
EMBEDDING_BATCH_SIZE = env_int("MEMSITE_EMBEDDING_BATCH_SIZE", 64)
EMBEDDING_TIMEOUT = env_float("MEMSITE_EMBEDDING_TIMEOUT", 30.0)
# The chat proxy (/llm/v1/, docs/proxy.md): the default upstream when Settings names none.
PROXY_UPSTREAM_URL = env("MEMSITE_PROXY_UPSTREAM_URL")
PROXY_UPSTREAM_KEY = env("MEMSITE_PROXY_UPSTREAM_KEY")
PROXY_UPSTREAM_TIMEOUT = env_float("MEMSITE_PROXY_UPSTREAM_TIMEOUT", 300.0)
PROXY_MAX_BODY_BYTES = env_int("MEMSITE_PROXY_MAX_BODY_BYTES", 20 * 1024 * 1024)
# Extra server threads for chat streams, which hold one each while the model answers
# (manage.py serve; other requests keep to WEB_THREADS at a time).
PROXY_STREAM_THREADS = max(0, env_int("MEMSITE_PROXY_STREAM_THREADS", 16))
CONTEXT_MAX_TOKENS = env_int("MEMSITE_CONTEXT_MAX_TOKENS", 4000)
CONTEXT_CARDS_TOKENS = env_int("MEMSITE_CONTEXT_CARDS_TOKENS", CARDS_TOKEN_BUDGET)
CONTEXT_TURNS_TOKENS = env_int("MEMSITE_CONTEXT_TURNS_TOKENS", 2000)
CONTEXT_EVIDENCE_TOKENS = env_int("MEMSITE_CONTEXT_EVIDENCE_TOKENS", 900)
CONTEXT_RESERVE_TOKENS = env_int("MEMSITE_CONTEXT_RESERVE_TOKENS", 500)
# Recall on every /context (issues 19, 30): facts, episodes, raw turns and attachments whose
# fused score on absolute values reaches their kind's gate join the evidence even without a
# trigger word. Turns and episodes were chosen on the real pipeline's tune sets (bench/context.py
# --real --sweep: LoCoMo conv-49/50, MADial's even dialogues); attachments (in no benchmark set)
# keep the facts' gate.
CONTEXT_RECALL_GATE = env_float("MEMSITE_CONTEXT_RECALL_GATE", 0.5)
CONTEXT_RECALL_GATES = {
    "fact": CONTEXT_RECALL_GATE,
    "episode": env_float("MEMSITE_CONTEXT_RECALL_GATE_EPISODE", 0.6),
    "turn": env_float("MEMSITE_CONTEXT_RECALL_GATE_TURN", 0.65),
    "attachment": env_float("MEMSITE_CONTEXT_RECALL_GATE_ATTACHMENT", CONTEXT_RECALL_GATE),
}
RECALL_LOG_DAYS = env_int("MEMSITE_RECALL_LOG_DAYS", 90)
# Access counters and the recall log are written by a thread after the answer (search.py).
SEARCH_RECORD_IN_BACKGROUND = env_bool("MEMSITE_SEARCH_RECORD_IN_BACKGROUND", True)
# ... gathering the recalls of this many seconds into one transaction: each commit makes every
# searching connection of the process re-read its pages (docs/performance.md, issue 33).
SEARCH_RECORD_DELAY = env_float("MEMSITE_SEARCH_RECORD_DELAY", 0.2)

# Review desk (issue 3): the navigation's review count, and logins land on the review queue
# once onboarding is done (memsite.web.home.landing decides).
TEMPLATES[0]["OPTIONS"]["context_processors"].append("memsite.web.context_processors.review_badge")
LOGIN_REDIRECT_URL = "landing"

# Episodes and attachments pages (issue 8): the file types an upload may have, on the page and
# in the API (checked against the type the file name implies, or the declared one without an
# extension). No SVG or HTML: images are shown inline, and those could carry scripts.
_allowed_types = env(
    "MEMSITE_ATTACHMENT_ALLOWED_TYPES",
    "image/jpeg,image/png,image/gif,image/webp,image/heic,image/heif,"
    "audio/mpeg,audio/mp4,audio/x-m4a,audio/aac,audio/wav,audio/x-wav,audio/ogg,audio/webm,"
    "audio/flac,video/mp4,video/webm,video/quicktime,application/pdf,text/plain,text/markdown,text/csv,application/json,"
    "application/msword,application/vnd.ms-excel,application/vnd.ms-powerpoint,"
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document,"
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet,"
    "application/vnd.openxmlformats-officedocument.presentationml.presentation,"
    "application/vnd.oasis.opendocument.text,application/vnd.oasis.opendocument.spreadsheet,"
    "application/vnd.oasis.opendocument.presentation",
)
ATTACHMENT_ALLOWED_TYPES = [t.strip().lower() for t in _allowed_types.split(",") if t.strip()]

# Export, import and backups (issue 8): the JSONL conversation backup under
# DATA_DIR/conversation_history is pruned nightly after this many days (0 = keep; rows stay).
CONVERSATION_LOG_RETENTION_DAYS = env_int("MEMSITE_CONVERSATION_LOG_RETENTION_DAYS", 30)

# Getting started and error pages (issue 21): a failed CSRF check shows the app's 403 page.
CSRF_FAILURE_VIEW = "memsite.web.errors.csrf_failure"
