"""Raw samples partitioned by time (PostgreSQL declarative range partitioning, one partition per hour).

Retention then rolls up and drops whole partitions instead of deleting rows (docs/pipeline.md). The
tables keep their names, columns, unique constraints, check and BRIN index, so the ORM, the admin and
the API see no difference; the primary key becomes (id, ts) because a unique key of a partitioned table
must contain the partition key (Django still treats ``id`` as the key: it stays unique, from one
sequence). Existing rows are moved into hourly partitions; a DEFAULT partition catches rows of hours
that have none yet (services.ensure_partitions moves them out when it creates that hour's partition). WindowDigest gains the shard that wrote it.
"""

from django.db import migrations, models


def _convert(table: str, columns: str, unique: tuple[str, str], check: tuple[str, str] | None, brin: str) -> str:
    old = f"{table}_unpartitioned"
    unique_name, unique_cols = unique
    check_sql = f", CONSTRAINT {check[0]} CHECK ({check[1]})" if check else ""
    rename_check = f"ALTER TABLE {old} RENAME CONSTRAINT {check[0]} TO {check[0]}_old;" if check else ""
    return f"""
ALTER TABLE {table} RENAME TO {old};
ALTER TABLE {old} RENAME CONSTRAINT {unique_name} TO {unique_name}_old;
ALTER INDEX {table}_pkey RENAME TO {table}_pkey_old;
ALTER INDEX {brin} RENAME TO {brin}_old;
{rename_check}
CREATE SEQUENCE {table}_ids;
CREATE TABLE {table} (
    id bigint NOT NULL DEFAULT nextval('{table}_ids'),
    {columns},
    CONSTRAINT {table}_pkey PRIMARY KEY (id, ts),
    CONSTRAINT {unique_name} UNIQUE ({unique_cols}){check_sql}
) PARTITION BY RANGE (ts);
ALTER SEQUENCE {table}_ids OWNED BY {table}.id;
CREATE INDEX {brin} ON {table} USING brin (ts);
-- rows written around the pipeline (tests, hand-made inserts) for an hour without a partition
CREATE TABLE {table}_default PARTITION OF {table} DEFAULT;
SELECT setval('{table}_ids', COALESCE((SELECT max(id) FROM {old}), 0) + 1, false);
DO $$
DECLARE h timestamptz;
BEGIN
    FOR h IN SELECT DISTINCT date_trunc('hour', ts, 'UTC') FROM {old} LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF {table} FOR VALUES FROM (%L) TO (%L)',
                       '{table}_p' || to_char(h AT TIME ZONE 'UTC', 'YYYYMMDDHH24'), h, h + interval '1 hour');
    END LOOP;
END $$;
INSERT INTO {table} (id, ts, {unique_cols.replace('ts, ', '')}, value)
    SELECT id, ts, {unique_cols.replace('ts, ', '')}, value FROM {old};
DROP TABLE {old};
"""


PAIR = _convert(
    "probes_pairsample",
    "ts timestamptz NOT NULL, series varchar(16) NOT NULL, source varchar(253) NOT NULL, "
    "target varchar(253) NOT NULL, value double precision NOT NULL",
    ("pairsample_unique_point", "ts, series, source, target"),
    ("pairsample_value_non_negative", "value >= 0.0::double precision"),
    "pairsample_ts_brin",
)
NODE = _convert(
    "probes_nodesample",
    "ts timestamptz NOT NULL, series varchar(24) NOT NULL, node varchar(253) NOT NULL, "
    "value double precision NOT NULL",
    ("nodesample_unique_point", "ts, series, node"),
    None,
    "nodesample_ts_brin",
)


class Migration(migrations.Migration):
    atomic = True

    dependencies = [
        ("probes", "0004_window_digest"),
    ]

    operations = [
        migrations.RunSQL(PAIR, reverse_sql=migrations.RunSQL.noop),
        migrations.RunSQL(NODE, reverse_sql=migrations.RunSQL.noop),
        migrations.RemoveConstraint(model_name="windowdigest", name="windowdigest_unique"),
        migrations.AddField(
            model_name="windowdigest",
            name="shard",
            field=models.CharField(blank=True, default="", max_length=16,
                                   help_text="Pull shard that stored these pairs, e.g. 2/4; empty when unsharded"),
        ),
        migrations.AddConstraint(
            model_name="windowdigest",
            constraint=models.UniqueConstraint(fields=("series", "ts", "shard"), name="windowdigest_unique"),
        ),
    ]
