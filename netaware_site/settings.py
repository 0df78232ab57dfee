"""netaware settings: everything from the environment (see docs/configuration.md)."""

from __future__ import annotations

from pathlib import Path

import dj_database_url

from .env import PRODUCTION, env, env_bool, env_float, env_int, env_list

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = env("SECRET_KEY", "dev-insecure-netaware-secret-key-change-me", required_in_production=True)
DEBUG = env_bool("DEBUG", not PRODUCTION)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "*" if not PRODUCTION else "")
if PRODUCTION and not ALLOWED_HOSTS:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when NETAWARE_ENV=production")
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
    "apps.topology",
    "apps.appgroups",
    "apps.scheduler",
    "apps.probes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves admin / DRF / Swagger UI assets from gunicorn too: no separate web server, no CDN.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# The extender must answer /scheduler/filter and /scheduler/filter/ alike, never with a redirect:
# Go's http client re-sends a 301 as a bodiless GET.
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
            ]
        },
    }
]
WSGI_APPLICATION = "netaware_site.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/netaware", required_in_production=True),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
DATABASES["default"].setdefault("OPTIONS", {})
DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 3))
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
STATIC_ROOT = BASE_DIR / "staticfiles"
# Serve straight from the apps' static folders when collectstatic has not run (development, tests).
WHITENOISE_USE_FINDERS = True

# Celery: Redis broker and result backend; schedules live in django-celery-beat's tables.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)

REQUIRE_AUTH = env_bool("NETAWARE_REQUIRE_AUTH", PRODUCTION)
LOGIN_URL = "admin:login"

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    # Reads are open; writes need a user (admin session or HTTP basic) wherever NETAWARE_REQUIRE_AUTH is
    # on, which it is by default in production. The extender verbs are not DRF views and stay open to
    # kube-scheduler.
    "DEFAULT_PERMISSION_CLASSES": ["netaware_site.permissions.WritesNeedUserWhenRequired"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
    "EXCEPTION_HANDLER": "rest_framework.views.exception_handler",
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
}

# Bodies larger than this are refused before parsing (extender requests with 5,000 full Node
# objects are a few MB; anything far beyond is a mistake or an attack).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BYTES", 32 * 1024 * 1024)

# --- netaware domain settings -------------------------------------------------------------
NETAWARE = {
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
    "DECISION_QUEUE": env_bool("NETAWARE_DECISION_QUEUE", True),
    "DECISION_QUEUE_MAX": env_int("NETAWARE_DECISION_QUEUE_MAX", 20000),
    "STATE_DB_CHECK_SECONDS": env_float("NETAWARE_STATE_DB_CHECK_SECONDS", 2.0),
    # Extender: read the Redis state version at most this often (staleness bound for writes made by
    # other processes; a bind answered by this process is seen by its next request at once).
    "STATE_VERSION_CHECK_SECONDS": env_float("NETAWARE_STATE_VERSION_CHECK_SECONDS", 0.02),
    # Serve /scheduler/* through the lean WSGI dispatch (netaware_site/wsgi.py) instead of Django's
    # middleware stack; false only for comparison (bench/bench_extender.py --compare).
    "LEAN_EXTENDER": env_bool("NETAWARE_LEAN_EXTENDER", True),
    "STATE_MAX_AGE_SECONDS": env_float("NETAWARE_STATE_MAX_AGE_SECONDS", 15.0),
    "STATE_RETRY_AFTER_SECONDS": env_float("NETAWARE_STATE_RETRY_AFTER_SECONDS", 1.0),
    "HOTSPOT_WINDOW_SECONDS": env_int("NETAWARE_HOTSPOT_WINDOW_SECONDS", 300),
    "BIND_ATTEMPTS": env_int("NETAWARE_BIND_ATTEMPTS", 4),
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
