"""Models of the appgroups app."""

from django.db import models  # noqa: F401
