"""Choices of the scheduler app."""

from django.db import models


class Verb(models.TextChoices):
    FILTER = "filter", "filter"
    PRIORITIZE = "prioritize", "prioritize"
    BIND = "bind", "bind"
    PREEMPT = "preempt", "preempt"
