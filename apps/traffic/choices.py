"""Choice sets of the traffic app."""

from django.db import models


class Mode(models.TextChoices):
    """What netaware does with an observed AppGroup (per namespace, or per application within one)."""

    SUGGEST = "suggest", "suggest (shown beside the declared AppGroup with a diff; nothing steers)"
    ADOPT = "adopt", "adopt (created/updated with origin observed; steers scheduling)"
    OFF = "off", "off (not learned)"
