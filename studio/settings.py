"""Settings for Compliance Studio: one file, configured by environment variables.

With no environment at all it runs for development: DEBUG on, SQLite in the repository root and
Celery tasks executed in-process, so a newcomer needs no services. DATABASE_URL and
CELERY_BROKER_URL switch to Postgres and Redis; DEBUG=false turns on the production hardening.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue as KombuQueue  # CELERY_TASK_QUEUES

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def env_str(name: str, default: str = "") -> str:
    # An empty value counts as unset, so `FOO=` in a compose or .env file falls back to the default.
    return os.environ.get(name) or default


def env_bool(name: str, default: bool) -> bool:
    raw = env_str(name).strip().lower()
    if not raw:
        return default
    if raw in _TRUE_WORDS:
        return True
    if raw in _FALSE_WORDS:
        return False
    # A typo such as DEBUG=flase must not silently leave production in debug mode.
    raise ImproperlyConfigured(f"{name} must be true or false, not {os.environ[name]!r}")


def env_number(name: str, default: float, kind: type = int, minimum: float = 0):
    """A number from the environment: a typo or a negative size stops the start with a message
    naming the variable, rather than a bare ValueError from deep in the settings."""
    raw = env_str(name).strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ImproperlyConfigured(f"{name} must be {what}, not {os.environ[name]!r}") from None
    if not value >= minimum:  # also refuses nan
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {raw}")
    return value


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = env_str(name)
    if not raw:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is false")
    SECRET_KEY = "django-insecure-development-only-never-use-in-production"

# Empty by default: with DEBUG on Django still serves localhost; with DEBUG off it serves nothing
# until the hosts are named.
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "studio.workspaces",
    "studio.rules",
    "studio.traces",
    "studio.audits",
    "studio.evidence",
    "studio.live",
    "studio.guard",
    "studio.web",
    "csp",
    "template_partials",
    # Only for its templates and static files: /api/docs serves Swagger UI from them, not from a
    # CDN with an inline script (which the Content-Security-Policy below would block).
    "ninja",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "studio.web.middleware.RetryAfterOn503",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # NUL, lone surrogates and unusable file names refused before any view (studio.boundary).
    "studio.boundary.RefuseHostileInput",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "studio.web.middleware.HtmxSignInRedirect",
]

ROOT_URLCONF = "studio.urls"
WSGI_APPLICATION = "studio.wsgi.application"
ASGI_APPLICATION = "studio.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "studio.web.context.workspaces",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=60,
        # Persistent connections must survive a Postgres restart without a burst of 500s.
        conn_health_checks=True,
    ),
}
# Under an ASGI server (uvicorn, the production server: docs/deployment.md) every request runs in
# a thread of its own, so a persistent connection would be left behind by each request until the
# garbage collector found it: there, set DATABASE_POOL=true (psycopg's pool, which needs the
# psycopg_pool package: each request borrows a connection and hands it back) or
# DATABASE_CONN_MAX_AGE=0 (a new connection per request).  Under gunicorn's sync workers and in
# Celery the persistent connections of the default serve best.
DATABASES["default"]["CONN_MAX_AGE"] = env_number("DATABASE_CONN_MAX_AGE", 60)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default writes from background threads too (anticipation searches, risk
    # models): a transaction takes SQLite's write lock when it begins and waits for it (up to the
    # timeout), rather than failing at once ("database is locked") when its first read turns into
    # a write while another thread writes; WAL lets pages read while a thread writes.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        transaction_mode="IMMEDIATE", timeout=env_number("SQLITE_TIMEOUT", 30.0, float),
        init_command="PRAGMA journal_mode=WAL;")
if env_bool("DATABASE_POOL", False):
    try:
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise ImproperlyConfigured("DATABASE_POOL=true needs psycopg's pool: pip install "
                                   "'psycopg[pool]'") from None
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django's pool refuses persistent connections
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env_number("DATABASE_POOL_MIN_SIZE", 2),
        "max_size": env_number("DATABASE_POOL_MAX_SIZE", 20, minimum=1),
        # The health checks above make the pool check a connection before it lends it.
        "timeout": env_number("DATABASE_POOL_TIMEOUT", 10.0, float, minimum=0.1)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

# Production hardening; `manage.py check --deploy` is clean with DEBUG=false.
if not DEBUG:
    SECURE_SSL_REDIRECT = True
    # Load balancers probe over plain HTTP; a redirect would read as "down".
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 60 * 60 * 24 * 365
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    # Only behind a TLS-terminating proxy that overwrites this header; trusting it otherwise
    # lets any client claim HTTPS.
    if env_bool("BEHIND_TLS_PROXY", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Logging to stderr, where a container's or a process manager's log collects it.  Django's own
# default writes server errors only with DEBUG on (otherwise it mails them to ADMINS, which is
# empty): a 500 in production was logged nowhere.  Here every 500 is written with its traceback
# (logger django.request), in production as in development.  Client errors (4xx, also logged by
# django.request) are left out in production, where probes and bad tokens would flood the log.
# LOG_LEVEL: the threshold for the studio's own loggers and everything else (default WARNING).
LOG_LEVEL = env_str("LOG_LEVEL", "WARNING").upper()
if LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    raise ImproperlyConfigured("LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, "
                               f"not {os.environ['LOG_LEVEL']!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(process)d: %(message)s"},
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr",
                   "formatter": "plain"},
    },
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        # Django's records go to the root's handler, in place of Django's console handler (DEBUG
        # only) and mail_admins (ADMINS is empty).
        "django": {"handlers": [], "level": "INFO"},
        "django.request": {"level": "WARNING" if DEBUG else "ERROR"},
    },
}

# Django's cache holds the live rate-limit counters (studio.live.intake.check_rate).  Unset, each
# server process counts on its own, in local memory; a Redis URL makes one count for every process
# and host.  Short timeouts: a cache that does not answer lets live requests through, at once.
CACHE_URL = env_str("CACHE_URL")
if not CACHE_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
elif CACHE_URL.partition("://")[0] in ("redis", "rediss", "unix"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": CACHE_URL, "KEY_PREFIX": "studio",
                          "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25}}}
else:
    raise ImproperlyConfigured("CACHE_URL must be a redis://, rediss:// or unix:// URL, "
                               f"not {CACHE_URL!r}")

# Celery: every setting is read by worker/celery.py from CELERY_<NAME>.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
if not CELERY_BROKER_URL:
    # No broker configured: run tasks in the calling process and raise their errors there, so
    # development and tests need no Redis. The in-memory transport keeps anything that still
    # talks to a broker from trying the default amqp://localhost.
    CELERY_BROKER_URL = "memory://"
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A broker restart leaves the tasks a worker is running alone: they finish their work in
# Postgres, and a task whose acknowledgement the restart lost is delivered again and finds its
# work done (tasks are idempotent).  Cancelling them instead (Celery 6's default) would throw away
# long audit batches for a blink of Redis.  Whether the worker itself survives the restart is a
# matter of versions: celery 5.7.0's does not (pyproject.toml pins; docs/deployment.md).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Where tasks go and workers listen unless told otherwise; several studios (or test runs) can
# share one Redis by naming their own queue.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "celery")

# A task is acknowledged only after it finishes, and a task whose worker died is requeued, so an
# audit interrupted by SIGKILL is run again rather than lost (tasks are idempotent).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Audit batches are long: a worker must not hoard queued tasks that idle workers could run.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 30 * 60
# Redis redelivers an unacknowledged task after the visibility timeout; below the time limit, a
# still-running task would be started a second time, concurrently. Set wherever Celery reads it.
# CELERY_VISIBILITY_TIMEOUT (seconds) exists for tests that kill workers and want redelivery soon.
celery_visibility_timeout = env_number("CELERY_VISIBILITY_TIMEOUT", 60 * 60, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": celery_visibility_timeout}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": celery_visibility_timeout}
# Redis can still lose a task outright: one popped by a worker that dies before recording it as
# unacknowledged is never redelivered.  So beat runs a sweeper that enqueues again the batches of
# audits (and the parses of uploads) that made no progress for AUDIT_STALL_SECONDS - longer than
# the task time limit, so nothing still running is duplicated.  Duplicates are harmless anyway.
AUDIT_STALL_SECONDS = env_number("AUDIT_STALL_SECONDS", CELERY_TASK_TIME_LIMIT + 5 * 60,
                                 minimum=1)
AUDIT_SWEEP_SECONDS = env_number("AUDIT_SWEEP_SECONDS", 60.0, float, minimum=1)
LIVE_IDLE_SWEEP_SECONDS = env_number("LIVE_IDLE_SWEEP_SECONDS", 60.0, float, minimum=1)
RETENTION_SWEEP_SECONDS = env_number("RETENTION_SWEEP_SECONDS", 3600.0, float, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "requeue-stalled-work": {"task": "worker.audits.requeue_stalled_work",
                             "schedule": AUDIT_SWEEP_SECONDS},
    # Live sessions idle past their workspace's live_inactivity_minutes get their end verdicts.
    "end-idle-live-sessions": {"task": "worker.live.end_idle_live_sessions",
                               "schedule": LIVE_IDLE_SWEEP_SECONDS},
    # Uploads and live sessions older than their workspace's retention_days are erased.
    "apply-retention": {"task": "worker.retention.apply_retention",
                        "schedule": RETENTION_SWEEP_SECONDS},
}
CELERY_BEAT_SCHEDULE_FILENAME = env_str("CELERY_BEAT_SCHEDULE_FILENAME",
                                        str(BASE_DIR / "var" / "celerybeat-schedule"))

# How long a server process trusts a token it has verified (revocation reaches other processes
# within this; 0 looks every token up on every request).
TOKEN_CACHE_SECONDS = env_number("TOKEN_CACHE_SECONDS", 5.0, float)

# Guard polls waiting for a person (studio.guard.waits, docs/guard-waits.md): the most a token
# and a workspace hold at once (429 with Retry-After beyond), counted in Django's cache (per
# process unless CACHE_URL is set).
GUARD_WAITS_PER_TOKEN = env_number("GUARD_WAITS_PER_TOKEN", 20, minimum=1)
GUARD_WAITS_PER_WORKSPACE = env_number("GUARD_WAITS_PER_WORKSPACE", 100, minimum=1)

# Sign-in throttling (studio.web.signin), counted in Django's cache: after this many failed
# sign-ins for one username, within the lockout period, every sign-in for that username is
# refused (even with the right password) until the period has passed; after this many from one
# address, so is every sign-in from there for a username that failed from there (others still
# sign in).  With the default local-memory cache each server process counts alone; set
# CACHE_URL so that all of them count together.
SIGN_IN_MAX_FAILURES = env_number("SIGN_IN_MAX_FAILURES", 5, minimum=1)
SIGN_IN_MAX_FAILURES_PER_ADDRESS = env_number("SIGN_IN_MAX_FAILURES_PER_ADDRESS", 20, minimum=1)
SIGN_IN_LOCKOUT_SECONDS = env_number("SIGN_IN_LOCKOUT_SECONDS", 15 * 60, minimum=1)
# How many proxies stand in front of the studio, each appending the address it saw to
# X-Forwarded-For (a TLS proxy: 1).  The client's address is then read that many entries from
# the header's right (studio.web.proxy); 0, the default, never reads the header, since any
# client can write it.  More than the real number lets clients choose their address.
TRUSTED_PROXY_COUNT = env_number("TRUSTED_PROXY_COUNT", 0)

# How long a server process reuses a workspace's live rules and labelers before reading them
# again (changes made through this process apply at once; 0 reads them on every delivery).
LIVE_CONTEXT_SECONDS = env_number("LIVE_CONTEXT_SECONDS", 2.0, float)

# Whether a live delivery is answered only once its events are flushed to disk (Postgres
# synchronous_commit).  Off, the answer comes without waiting for the disk; an operating-system
# crash or power loss (not a Postgres or studio crash) may then lose the last fraction of a
# second of acknowledged events.  On by default: a compliance record must not vanish.
LIVE_DURABLE_COMMIT = env_bool("LIVE_DURABLE_COMMIT", True)

# Ingestion limits (RELIABILITY.md 4, 7).
# Request bodies, also after decompression.
MAX_REQUEST_BYTES = env_number("MAX_REQUEST_BYTES", 20 * 1024 * 1024, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024  # larger uploads spool to disk, never to memory
# The first handler refuses an over-long file name before the next makes a temporary file of it.
FILE_UPLOAD_HANDLERS = [
    "studio.boundary.FileNameCheck",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
UPLOAD_ROOT = Path(env_str("UPLOAD_ROOT", str(BASE_DIR / "var" / "uploads")))
# Uploads (docs/uploads.md): parse attempts before an upload fails (a lost database connection
# spends none), and how long a parse retries lost connections itself before its task does.
UPLOAD_MAX_ATTEMPTS = env_number("UPLOAD_MAX_ATTEMPTS", 3, minimum=1)
UPLOAD_RECONNECT_SECONDS = env_number("UPLOAD_RECONNECT_SECONDS", 60.0, float, minimum=1)
LIVE_RATE_LIMIT_PER_MINUTE = env_number("LIVE_RATE_LIMIT_PER_MINUTE", 6000)
WEBHOOK_TOLERANCE_SECONDS = 300
AUDIT_BATCH_SIZE = env_number("AUDIT_BATCH_SIZE", 200, minimum=1)
AUDIT_MAX_ATTEMPTS = env_number("AUDIT_MAX_ATTEMPTS", 3, minimum=1)
# Risk models for the guard (studio.guard.learning, docs/guard-models.md): the newest finished
# sessions a model is learned from (fewer when tasks run in-process, where learning takes the web
# process's time); how long one may learn (then it fails; 10^4 states take seconds); after
# how long a model still queued or running is taken as lost (its follow-up then starts); how
# often a server process asks which model is newest.
GUARD_MODEL_MAX_SESSIONS = env_number(
    "GUARD_MODEL_MAX_SESSIONS", 500 if CELERY_BROKER_URL == "memory://" else 5000,
    minimum=1)
GUARD_MODEL_TIME_LIMIT = env_number("GUARD_MODEL_TIME_LIMIT", 10 * 60, minimum=1)
GUARD_MODEL_STALL_SECONDS = env_number("GUARD_MODEL_STALL_SECONDS",
                                       GUARD_MODEL_TIME_LIMIT + 5 * 60, minimum=1)
GUARD_MODEL_CHECK_SECONDS = env_number("GUARD_MODEL_CHECK_SECONDS", 5.0, float)
# Domain predicates (docs/guard-models.md): a state with predicates seen fewer times than this is
# merged into a coarser one; past this many states the rarest ones with predicates are merged.
GUARD_MODEL_MIN_STATE_VISITS = env_number("GUARD_MODEL_MIN_STATE_VISITS", 5, minimum=1)
GUARD_MODEL_MAX_STATES = env_number("GUARD_MODEL_MAX_STATES", 100_000, minimum=1)
# Without a broker, a model is learned on a background thread of the process that asked for it,
# never inside the request (GUARD_MODEL_IN_BACKGROUND; false: in the request, as the other tasks
# run without a broker - the tests' default), GUARD_MODEL_BACKGROUND_DELAY seconds after it was
# asked for, so that a burst of triggers finds it still queued and coalesces into it.
GUARD_MODEL_IN_BACKGROUND = env_bool("GUARD_MODEL_IN_BACKGROUND", True)
GUARD_MODEL_BACKGROUND_DELAY = env_number("GUARD_MODEL_BACKGROUND_DELAY", 2.0, float)
# Learn again once this many live sessions of a workspace that learned a model before have ended
# since its newest model was asked for (the end call or the idle sweep; 0: never on that count).
GUARD_MODEL_RELEARN_SESSIONS = env_number("GUARD_MODEL_RELEARN_SESSIONS", 50)
# Learning runs on a queue of its own, so that uploads, audits and the sweeper never wait behind
# it: run a worker for it (docker-compose's models-worker, `-Q models`).  Beside a named
# CELERY_QUEUE it is "<that name>-models", so studios (and test runs) sharing a Redis keep apart.
# A worker started without -Q takes both queues.
GUARD_MODEL_QUEUE = env_str("GUARD_MODEL_QUEUE", "models" if CELERY_TASK_DEFAULT_QUEUE == "celery"
                            else f"{CELERY_TASK_DEFAULT_QUEUE}-models")
CELERY_TASK_QUEUES = [KombuQueue(CELERY_TASK_DEFAULT_QUEUE), KombuQueue(GUARD_MODEL_QUEUE)]
CELERY_TASK_ROUTES = {"worker.guard.learn_risk_model": {"queue": GUARD_MODEL_QUEUE}}
# A model whose worker was lost is taken as failed by the sweep too (its follow-up starts then).
CELERY_BEAT_SCHEDULE["expire-stalled-risk-models"] = {
    "task": "worker.guard.expire_stalled_risk_models", "schedule": AUDIT_SWEEP_SECONDS}
# An upload audited as it loads, on Postgres, from this size on: its labelling and monitoring
# run in child processes, on cores of their own (studio.audits.intake).  Smaller files are
# monitored in the loading process, where starting a process would cost more than it saves.
ARRIVAL_PROCESS_MIN_BYTES = env_number("ARRIVAL_PROCESS_MIN_BYTES", 8 * 1024 * 1024)
# How many such child processes share the sessions of one upload out.
ARRIVAL_PROCESSES = env_number("ARRIVAL_PROCESSES", 2, minimum=1)
# An upload loaded on Postgres is parsed in a child process from this size on, so the thread
# writing its batches has the loading process's Python to itself (studio.traces.parsing).
PARSE_PROCESS_MIN_BYTES = env_number("PARSE_PROCESS_MIN_BYTES", 8 * 1024 * 1024)

# Pages: sign-in, and a Content-Security-Policy that allows no inline script or style, so an
# injected <script> in a log line could not run even if escaping failed (RELIABILITY.md 14).
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
from csp.constants import NONE, SELF  # noqa: E402 - kept next to the policy it builds

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
        "base-uri": [NONE],
        "object-src": [NONE],
    },
}
