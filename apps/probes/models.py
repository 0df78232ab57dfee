"""Models of the probes app."""

from django.db import models  # noqa: F401
