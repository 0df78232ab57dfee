"""netaware settings: everything from the environment (see docs/configuration.md)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url

from netaware_core.env import (
    MIN_SECRET_KEY_LENGTH,
    MIN_TOKEN_LENGTH,
    PRODUCTION,
    check_allowed_hosts,
    check_database_url,
    check_secret,
    env,
    env_bool,
    env_float,
    env_int,
    env_list,
)

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = env("SECRET_KEY", "dev-insecure-netaware-secret-key-change-me", required_in_production=True)
DEBUG = env_bool("DEBUG", not PRODUCTION)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "*" if not PRODUCTION else "")
if PRODUCTION:
    # Production refuses what would run with a publicly known secret or answer any Host header.
    check_secret("SECRET_KEY", SECRET_KEY, min_length=MIN_SECRET_KEY_LENGTH)
    check_allowed_hosts("ALLOWED_HOSTS", ALLOWED_HOSTS)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "simple_history",
    "axes",
    "apps.topology",
    "apps.appgroups",
    "apps.scheduler",
    "apps.traffic",
    "apps.probes",
    "apps.accounts",
    "apps.dashboard",
    "apps.demo",
]

MIDDLEWARE = [
    # /healthz, /readyz and /metrics first: the kubelet and Prometheus call them by pod IP over plain
    # HTTP, so they must not meet the Host check, the HTTPS redirect or a login (netaware_site/internal.py).
    "netaware_site.internal.InternalEndpointsMiddleware",
    # Bodies above MAX_REQUEST_BYTES get a 413 before any parser reads them.
    "netaware_site.internal.RequestSizeLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves admin / DRF / Swagger UI assets from gunicorn too: no separate web server, no CDN.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Who made a change, for the change history of AppGroups and profiles.
    "simple_history.middleware.HistoryRequestMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Every page and API needs a user, except health, /metrics and the login page.
    "apps.accounts.middleware.LoginRequiredMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Turns a login page locked out by django-axes into a 429 with Retry-After (apps/accounts/lockout.py).
    "axes.middleware.AxesMiddleware",
]

# No redirects to a slashed URL: API clients (and kube-scheduler, which re-sends a 301 as a bodiless
# GET) would lose their POST bodies.
APPEND_SLASH = False

ROOT_URLCONF = "netaware_site.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "netaware_site" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.dashboard.context_processors.access",
            ]
        },
    }
]
WSGI_APPLICATION = "netaware_site.wsgi.application"

DATABASE_URL = env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/netaware", required_in_production=True)
if PRODUCTION:
    check_database_url("DATABASE_URL", DATABASE_URL)
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
DATABASES["default"].setdefault("OPTIONS", {})
DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 3))
# A hung database (a lock held, a stuck server) must fail a query, not hang its thread: every
# statement gets a server-side limit (0 = none). The extender's loader and writers then keep the
# last good state and retry.
_statement_timeout_ms = env_int("DATABASE_STATEMENT_TIMEOUT_MS", 0)
if _statement_timeout_ms > 0:
    DATABASES["default"]["OPTIONS"].setdefault("options", f"-c statement_timeout={_statement_timeout_ms}")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env("REDIS_URL", "redis://127.0.0.1:6379/0", required_in_production=True)
PROMETHEUS_URL = env("PROMETHEUS_URL", "http://127.0.0.1:9090", required_in_production=True)
PROMETHEUS_TIMEOUT_SECONDS = env_float("PROMETHEUS_TIMEOUT_SECONDS", 5.0)

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
# Where collectstatic writes (the run command uses its state directory, so a stack started from a
# checkout never changes the files a test session of the same checkout serves).
STATIC_ROOT = Path(env("NETAWARE_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
# Serve straight from the apps' static folders when collectstatic has not run (development, tests).
WHITENOISE_USE_FINDERS = True
# After collectstatic: content-hashed names (cached for a year, immutable) and gzip copies.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "apps.dashboard.storage.StaticStorage"},
}

# Celery: Redis broker and result backend; schedules live in django-celery-beat's tables.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TASK_ACKS_LATE = True
# A worker process killed mid-task (OOM, node drain) gives its task back instead of losing it; every
# task is idempotent (pulls are keyed by window, decision drains by event id), so a redo is safe.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Redis redelivers a message whose worker vanished entirely (SIGKILL of the whole worker) after this.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT_SECONDS", 600)}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis (the broker) lost mid-task: a late-acked task can no longer be acknowledged and Redis will
# redeliver it, so cancel it rather than let both copies run (docs/deploy.md, "When something fails").
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Queue that tasks go to and workers consume by default; a test session uses its own (tests/support/isolation.py).
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# Tasks that call the Kubernetes API, sent to their own queue when NETAWARE_KUBE_TASK_QUEUE is set
# (Kubernetes: `kube`, consumed only by netaware-cluster-worker, so the pipeline worker needs no token).
KUBE_TASKS = (
    "apps.appgroups.tasks.resync_cluster",
    "apps.appgroups.tasks.sync_appgroup",
    "apps.topology.tasks.publish_network_topology",
    "apps.traffic.tasks.refresh_observed",
)
KUBE_TASK_QUEUE = env("NETAWARE_KUBE_TASK_QUEUE", "")
if KUBE_TASK_QUEUE:
    CELERY_TASK_ROUTES = {name: {"queue": KUBE_TASK_QUEUE} for name in KUBE_TASKS}

# Authentication is required for every page and API by default, locally too. false (development
# only) lets anonymous users read; writes always need a user with the right role.
REQUIRE_AUTH = env_bool("NETAWARE_REQUIRE_AUTH", True)
LOGIN_URL = "login"

# --- Brute-force protection (django-axes; apps/accounts/lockout.py, docs/security.md) ----------------
# Failed logins (login page, admin, Basic auth) and failed API tokens are counted in Redis per client
# address and user name; at the limit that pair gets 429 + Retry-After for the cool-off, without
# hashing the password (a hash costs ~0.5 s of CPU). The same user from another address is not blocked.
# Over every user name, one address gets NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT failures (0: no cap).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env_bool("NETAWARE_LOGIN_LOCKOUT", True)
AXES_FAILURE_LIMIT = env_int("NETAWARE_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(seconds=env_int("NETAWARE_LOGIN_COOLOFF_SECONDS", 300))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# A successful login clears that pair's failures (a few typos do not add up over the day).
AXES_RESET_ON_SUCCESS = True
NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT = env_int("NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT", 30)
AXES_HANDLER = "apps.accounts.lockout.AddressCappedCacheHandler"
AXES_CACHE = "default"
AXES_CLIENT_IP_CALLABLE = "apps.accounts.lockout.client_address"
AXES_LOCKOUT_CALLABLE = "apps.accounts.lockout.lockout_response"
AXES_VERBOSE = False
# How many reverse proxies (ingress) append to X-Forwarded-For in front of the web; 0 trusts none and
# counts the TCP peer (behind an ingress every client would then share the ingress' address).
TRUSTED_PROXY_COUNT = env_int("NETAWARE_TRUSTED_PROXY_COUNT", 0)
LOGIN_REDIRECT_URL = "dashboard-topology"
LOGOUT_REDIRECT_URL = "login"

# --- HTTPS and cookies (``manage.py check --deploy`` is clean with the production defaults) ----------
# Behind a TLS-terminating ingress keep the redirect on and trust its X-Forwarded-Proto; turn the
# redirect off only when the ingress redirects itself (check --deploy then warns, security.W008).
SECURE_SSL_REDIRECT = env_bool("NETAWARE_SECURE_SSL_REDIRECT", PRODUCTION)
# Kubelet probes and Prometheus talk plain HTTP inside the cluster: never redirect them.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
if env_bool("NETAWARE_TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env_bool("NETAWARE_SECURE_COOKIES", PRODUCTION)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SECURE_HSTS_SECONDS = env_int("NETAWARE_HSTS_SECONDS", 31536000 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("NETAWARE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = env_bool("NETAWARE_HSTS_PRELOAD", PRODUCTION)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# /metrics (web and extender): ``Authorization: Bearer <token>``. Empty: 404 in production, open in
# development (netaware_core/metrics.py).
METRICS_TOKEN = env("NETAWARE_METRICS_TOKEN", "")
METRICS_OPEN_WITHOUT_TOKEN = not PRODUCTION
if PRODUCTION and METRICS_TOKEN:
    check_secret("NETAWARE_METRICS_TOKEN", METRICS_TOKEN, min_length=MIN_TOKEN_LENGTH)

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["netaware_core.filters.StrictFilterBackend"],
    "DEFAULT_PARSER_CLASSES": [
        # The one body loader (JSON or YAML: size, depth and alias limits; netaware_core/parsers.py).
        "netaware_core.parsers.JSONParser",
        "netaware_core.parsers.YAMLParser",
        "netaware_core.parsers.XYAMLParser",
        "netaware_core.parsers.TextYAMLParser",
        "netaware_core.parsers.TextXYAMLParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "netaware_core.filters.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    # Reads need a user with the viewer (or editor) role, writes the permission of what they change
    # (apps/accounts/permissions.py). The extender verbs are not DRF views and stay open to kube-scheduler.
    "DEFAULT_PERMISSION_CLASSES": ["apps.accounts.permissions.RolePermission"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
        "apps.accounts.authentication.BasicAuthentication",
    ],
    # Every 400 as {"detail": ..., "errors": {"field.path": [...]}} (docs/api.md).
    "EXCEPTION_HANDLER": "netaware_core.api_errors.api_exception_handler",
    # Requests that cost a plan (about a second of CPU) each: per user, counted in Redis, 429 + Retry-After.
    "DEFAULT_THROTTLE_RATES": {"drift-fresh": f"{env_int('NETAWARE_DRIFT_FRESH_PER_MINUTE', 12)}/min"},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "netaware API",
    "DESCRIPTION": "Network-aware scheduling companion for Kubernetes.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI / Redoc from the drf-spectacular-sidecar package: clusters are often air-gapped.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "netaware_core.api_errors.document_error_responses",
        "netaware_core.api_errors.document_every_response",
    ],
}

# Bodies larger than this are refused before parsing (extender requests with 5,000 full Node
# objects are a few MB; anything far beyond is a mistake or an attack).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BYTES", 32 * 1024 * 1024)

# --- netaware domain settings -------------------------------------------------------------
NETAWARE: dict[str, Any] = {
    # Which RTT quantile becomes the topology's latency (0.5, 0.9 or 0.99).
    "LATENCY_QUANTILE": env_float("NETAWARE_LATENCY_QUANTILE", 0.9),
    # Pairs whose newest sample is older than this are dropped from the topology and flagged stale.
    "STALE_AFTER_SECONDS": env_int("NETAWARE_STALE_AFTER_SECONDS", 600),
    # Topology snapshots kept in Postgres (older versions are pruned on every new one).
    "TOPOLOGY_KEEP_SNAPSHOTS": env_int("NETAWARE_TOPOLOGY_KEEP_SNAPSHOTS", 20),
    # Width of one pull window (seconds); windows are aligned to multiples of it.
    "PULL_WINDOW_SECONDS": env_int("NETAWARE_PULL_WINDOW_SECONDS", 60),
    # Range over which rate()/increase() are evaluated inside PromQL.
    "RATE_WINDOW": env("NETAWARE_RATE_WINDOW", "5m"),
    "RAW_RETENTION_HOURS": env_int("NETAWARE_RAW_RETENTION_HOURS", 24),
    "ROLLUP_RETENTION_DAYS": env_int("NETAWARE_ROLLUP_RETENTION_DAYS", 30),
    # Pipeline (apps/probes, docs/pipeline.md): YAML file overriding the default PromQL, catch-up bound,
    # windows pulled on the very first run, and the retry policy of pull_metrics.
    "QUERIES_FILE": env("NETAWARE_QUERIES_FILE", ""),
    "PULL_MAX_WINDOWS_PER_RUN": env_int("NETAWARE_PULL_MAX_WINDOWS_PER_RUN", 60),
    "PULL_INITIAL_WINDOWS": env_int("NETAWARE_PULL_INITIAL_WINDOWS", 5),
    "PULL_MAX_RETRIES": env_int("NETAWARE_PULL_MAX_RETRIES", 5),
    "PULL_RETRY_BACKOFF_SECONDS": env_float("NETAWARE_PULL_RETRY_BACKOFF_SECONDS", 2.0),
    "PULL_RETRY_BACKOFF_MAX_SECONDS": env_float("NETAWARE_PULL_RETRY_BACKOFF_MAX_SECONDS", 60.0),
    # Scale (docs/scale.md): pulls split by source node over this many Celery tasks; the probe plan
    # the emulator follows (the agents take the same values as PROBE_* flags).
    "PULL_SHARDS": env_int("NETAWARE_PULL_SHARDS", 1),
    "RETENTION_LOCK_TIMEOUT_SECONDS": env_float("NETAWARE_RETENTION_LOCK_TIMEOUT_SECONDS", 10.0),
    "PROBE_MAX_PEERS": env_int("NETAWARE_PROBE_MAX_PEERS", 24),
    "PROBE_MIN_PAIRS": env_int("NETAWARE_PROBE_MIN_PAIRS", 3),
    "PROBE_ROTATION_SECONDS": env_float("NETAWARE_PROBE_ROTATION_SECONDS", 21600.0),
    "PROBE_BANDWIDTH_PEERS": env_int("NETAWARE_PROBE_BANDWIDTH_PEERS", 8),
    "PROBE_RTT_EXPORT": env("NETAWARE_PROBE_RTT_EXPORT", "quantiles"),
    "SCENARIO": env("NETAWARE_SCENARIO", str(BASE_DIR / "scenarios" / "paper-testbed.yaml")),
    "KUBE_API_URL": env("KUBE_API_URL", ""),
    "KUBE_TOKEN": env("KUBE_TOKEN", ""),
    "KUBE_CA_FILE": env("KUBE_CA_FILE", ""),
    "KUBE_NAMESPACE": env("KUBE_NAMESPACE", "netaware-system"),
    # AppGroup sync: how long a deletion in netaware waits for the cluster (docs/sync.md).
    "APPGROUP_TOMBSTONE_RETENTION_DAYS": env_float("NETAWARE_APPGROUP_TOMBSTONE_RETENTION_DAYS", 7.0),
    # Scheduler extender (docs/scheduler.md).
    "DECISION_LOG": env_bool("NETAWARE_DECISION_LOG", True),
    "DECISION_RETENTION": env_int("NETAWARE_DECISION_RETENTION", 10000),
    "DECISION_QUEUE_MAX": env_int("NETAWARE_DECISION_QUEUE_MAX", 20000),
    # How long a drain's lock outlives a worker killed mid-drain (the next drain waits that long).
    "DECISION_DRAIN_LOCK_SECONDS": env_float("NETAWARE_DECISION_DRAIN_LOCK_SECONDS", 30.0),
    # Extender (docs/scheduler.md). Where nodes and pods come from: "kubernetes" (list + watch of the
    # API), "database" (the cluster watcher's tables), "auto" (kubernetes when an API is configured).
    "EXTENDER_SOURCE": env("NETAWARE_EXTENDER_SOURCE", "auto"),
    # Pods the extender may bind: those whose spec.schedulerName is one of these.
    "SCHEDULER_NAMES": tuple(env_list("NETAWARE_SCHEDULER_NAMES", "netaware-scheduler")),
    # Bind answers within this many seconds whatever the Kubernetes API does (keep it below the
    # KubeSchedulerConfiguration's httpTimeout, 5 s as shipped).
    "BIND_DEADLINE_SECONDS": env_float("NETAWARE_BIND_DEADLINE_SECONDS", 3.0),
    # Filter and prioritize answer within this many seconds of having the body, whatever the request's
    # size: nodes not evaluated by then fail (filter) or score neutral (prioritize) with the reason. Keep
    # it plus run_extender's --body-timeout (1 s) below the httpTimeout (5 s as shipped).
    "EXTENDER_DEADLINE_SECONDS": env_float("NETAWARE_EXTENDER_DEADLINE_SECONDS", 3.0),
    # How often the extender's loader compares the database fingerprint (change notifications over
    # Redis usually arrive first) and how often node usage is reloaded.
    "STATE_DB_CHECK_SECONDS": env_float("NETAWARE_STATE_DB_CHECK_SECONDS", 2.0),
    "STATE_MAX_AGE_SECONDS": env_float("NETAWARE_STATE_MAX_AGE_SECONDS", 15.0),
    # A loader round waiting longer than this on the database (hung, not refusing) is noted as stale.
    "STATE_HANG_SECONDS": env_float("NETAWARE_STATE_HANG_SECONDS", 5.0),
    # Several extender replicas: only the holder of this Lease (in KUBE_NAMESPACE) answers.
    "EXTENDER_LEADER_ELECTION": env_bool("NETAWARE_EXTENDER_LEADER_ELECTION", False),
    "EXTENDER_LEASE_NAME": env("NETAWARE_EXTENDER_LEASE_NAME", "netaware-extender"),
    # Lease duration; the holder renews every 2/15 of it and stops answering after 2/3 without a
    # renewal, before another replica may take over (kube-scheduler's 15 s / 10 s / 2 s).
    "EXTENDER_LEASE_SECONDS": env_float("NETAWARE_EXTENDER_LEASE_SECONDS", 15.0),
    # Rebalancer (manage.py run_rebalancer, docs/rebalancer.md): a pass every INTERVAL; drift (1 - current
    # score / best plan's) above THRESHOLD for SUSTAIN seconds starts moves; at most that many evictions
    # a minute per AppGroup and cluster-wide; a replacement not Ready within READY_TIMEOUT blocks its
    # workload; a move that did not improve the score stops the AppGroup for STOP_SECONDS.
    "REBALANCER_INTERVAL_SECONDS": env_float("NETAWARE_REBALANCER_INTERVAL_SECONDS", 10.0),
    "REBALANCER_DRIFT_THRESHOLD": env_float("NETAWARE_REBALANCER_DRIFT_THRESHOLD", 0.01),
    "REBALANCER_SUSTAIN_SECONDS": env_float("NETAWARE_REBALANCER_SUSTAIN_SECONDS", 60.0),
    "REBALANCER_APPGROUP_MOVES_PER_MINUTE": env_int("NETAWARE_REBALANCER_APPGROUP_MOVES_PER_MINUTE", 2),
    "REBALANCER_CLUSTER_MOVES_PER_MINUTE": env_int("NETAWARE_REBALANCER_CLUSTER_MOVES_PER_MINUTE", 6),
    "REBALANCER_READY_TIMEOUT_SECONDS": env_float("NETAWARE_REBALANCER_READY_TIMEOUT_SECONDS", 120.0),
    "REBALANCER_STOP_SECONDS": env_float("NETAWARE_REBALANCER_STOP_SECONDS", 600.0),
    "REBALANCER_LEASE_NAME": env("NETAWARE_REBALANCER_LEASE_NAME", "netaware-rebalancer"),
    "REBALANCER_LEASE_SECONDS": env_float("NETAWARE_REBALANCER_LEASE_SECONDS", 15.0),
    "WATCH_TIMEOUT_SECONDS": env_int("NETAWARE_WATCH_TIMEOUT_SECONDS", 300),
    "RESYNC_SECONDS": env_float("NETAWARE_RESYNC_SECONDS", 600.0),
    # The per-pod memo shared by filter and prioritize (off only to compare, bench/bench_scoring.py).
    "ENGINE_MEMO": env_bool("NETAWARE_ENGINE_MEMO", True),
    # Decisions kept in the extender process while both Redis and Postgres are away (newest kept).
    "DECISION_BUFFER_MAX": env_int("NETAWARE_DECISION_BUFFER_MAX", 5000),
    "HOTSPOT_WINDOW_SECONDS": env_int("NETAWARE_HOTSPOT_WINDOW_SECONDS", 300),
    # Longest a placement plan may take to compute on a request (docs/scheduler.md, "Placement plans").
    "PLAN_BUDGET_MS": env_float("NETAWARE_PLAN_BUDGET_MS", 50.0),
    # Observed traffic (apps/traffic, docs/traffic.md): which mesh sources to read ("auto": every adapter
    # whose metric is present; "off"; or a list such as "istio,otel"), the namespace of sources without
    # one (OpenTelemetry's service graph), the per-window edge cap, the learning rule's parameters and
    # the mode of namespaces without one of their own (suggest, adopt, off).
    "TRAFFIC_SOURCES": env("NETAWARE_TRAFFIC_SOURCES", "auto"),
    "TRAFFIC_DEFAULT_NAMESPACE": env("NETAWARE_TRAFFIC_DEFAULT_NAMESPACE", "default"),
    "TRAFFIC_MAX_EDGES": env_int("NETAWARE_TRAFFIC_MAX_EDGES", 20000),
    "TRAFFIC_IDLE_SECONDS": env_float("NETAWARE_TRAFFIC_IDLE_SECONDS", 900.0),
    "TRAFFIC_ALPHA": env_float("NETAWARE_TRAFFIC_ALPHA", 0.5),
    "TRAFFIC_MIN_REQUESTS": env_float("NETAWARE_TRAFFIC_MIN_REQUESTS", 0.01),
    "TRAFFIC_MIN_BYTES": env_float("NETAWARE_TRAFFIC_MIN_BYTES", 64.0),
    "TRAFFIC_HOT_EDGE_REQUESTS": env_float("NETAWARE_TRAFFIC_HOT_EDGE_REQUESTS", 1.0),
    "TRAFFIC_DEFAULT_MODE": env("NETAWARE_TRAFFIC_DEFAULT_MODE", "suggest"),
    "TRAFFIC_DISCOVERY_SECONDS": env_float("NETAWARE_TRAFFIC_DISCOVERY_SECONDS", 300.0),
}
# Largest extender request body read (a 5,000-node NodeList is ~9 MB); larger ones get an Error.
MAX_EXTENDER_BODY = env_int("NETAWARE_MAX_EXTENDER_BODY", 32 * 1024 * 1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
