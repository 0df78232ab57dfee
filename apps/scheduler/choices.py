"""Choices of the scheduler app."""

from django.db import models


class Verb(models.TextChoices):
    FILTER = "filter", "filter"
    PRIORITIZE = "prioritize", "prioritize"
    BIND = "bind", "bind"
    PREEMPT = "preempt", "preempt"
    # The rebalancer's: one pod moved toward the best plan (evicted), or proposed in dry-run.
    MOVE = "move", "move (rebalancer)"
