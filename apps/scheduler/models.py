"""Models of the scheduler app."""

from django.db import models  # noqa: F401
