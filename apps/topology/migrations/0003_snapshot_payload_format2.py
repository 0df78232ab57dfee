"""Snapshot payload format 2 (float32 sections at fixed offsets, written/read as binary parameters).

The payload column becomes STORAGE EXTERNAL (no pglz compression of float data that barely
compresses), so ``substring(payload FROM x FOR y)`` reads only the TOAST chunks it needs: the
loader fetches the arrays in slices. Existing (format 1, ``np.savez``) snapshots are kept and still
load; new rows use format 2. Applies to values written from now on; old values stay as they are.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("topology", "0002_rebuild_topology_schedule"),
    ]

    operations = [
        migrations.AlterField(
            model_name="topologysnapshot",
            name="payload",
            field=models.BinaryField(help_text="snapshot format 2: header, float32 arrays, bit-packed flags"),
        ),
        migrations.RunSQL(
            "ALTER TABLE topology_topologysnapshot ALTER COLUMN payload SET STORAGE EXTERNAL",
            "ALTER TABLE topology_topologysnapshot ALTER COLUMN payload SET STORAGE EXTENDED",
        ),
    ]
