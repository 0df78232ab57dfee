"""Models of the topology app."""

from django.db import models  # noqa: F401
