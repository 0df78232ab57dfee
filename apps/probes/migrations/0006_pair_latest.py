"""PairLatest: a recent sample per (series, source, target) -- at most 120 s older than the pair's newest
-- kept by statement-level triggers on the partitioned PairSample table (every insert or upsert batch,
from any writer), and filled once from the rows already there. Updates only touch ts and value (not
indexed), so with fillfactor 70 they stay HOT."""

from django.db import migrations, models

SYNC = """
ALTER TABLE probes_pairlatest SET (fillfactor = 70);
-- Only pairs new to the table, or whose kept row is more than REFRESH (120 s) older than the batch,
-- are written: most windows touch nothing (a hash anti-join, no update churn), and the selector
-- reads the last REFRESH of raw windows on top (apps/probes/selectors.py, LATEST_REFRESH_SECONDS).
CREATE FUNCTION probes_pairlatest_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO probes_pairlatest AS l (series, source, target, ts, value)
    SELECT DISTINCT ON (n.series, n.source, n.target) n.series, n.source, n.target, n.ts, n.value
    FROM new_rows n LEFT JOIN probes_pairlatest o
        ON o.series = n.series AND o.source = n.source AND o.target = n.target
    WHERE o.ts IS NULL OR o.ts < n.ts - interval '120 seconds'
    ORDER BY n.series, n.source, n.target, n.ts DESC
    ON CONFLICT (series, source, target) DO UPDATE SET ts = EXCLUDED.ts, value = EXCLUDED.value
    WHERE l.ts < EXCLUDED.ts;
    RETURN NULL;
END $$;
CREATE TRIGGER probes_pairlatest_after_insert AFTER INSERT ON probes_pairsample
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION probes_pairlatest_sync();
CREATE TRIGGER probes_pairlatest_after_update AFTER UPDATE ON probes_pairsample
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION probes_pairlatest_sync();
INSERT INTO probes_pairlatest (series, source, target, ts, value)
    SELECT DISTINCT ON (series, source, target) series, source, target, ts, value
    FROM probes_pairsample ORDER BY series, source, target, ts DESC;
"""
UNSYNC = """
DROP TRIGGER IF EXISTS probes_pairlatest_after_insert ON probes_pairsample;
DROP TRIGGER IF EXISTS probes_pairlatest_after_update ON probes_pairsample;
DROP FUNCTION IF EXISTS probes_pairlatest_sync();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('probes', '0005_partition_raw_samples'),
    ]

    operations = [
        migrations.CreateModel(
            name='PairLatest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('series', models.CharField(choices=[('rtt_p50', 'RTT p50 (s)'), ('rtt_p90', 'RTT p90 (s)'), ('rtt_p99', 'RTT p99 (s)'), ('loss_ratio', 'Loss ratio (0..1)'), ('bandwidth_bps', 'Bandwidth (bit/s)')], max_length=16)),
                ('source', models.CharField(max_length=253)),
                ('target', models.CharField(max_length=253)),
                ('ts', models.DateTimeField()),
                ('value', models.FloatField()),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('series', 'source', 'target'), name='pairlatest_unique')],
            },
        ),
        migrations.RunSQL(SYNC, reverse_sql=UNSYNC),
    ]
