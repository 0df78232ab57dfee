"""Observed traffic tables; the raw edge samples partitioned by hour (docs/traffic.md)."""

import django.contrib.postgres.indexes
from django.db import migrations, models


EDGE_SAMPLE_SQL = """
CREATE SEQUENCE traffic_edgesample_ids;
CREATE TABLE traffic_edgesample (
    id bigint NOT NULL DEFAULT nextval('traffic_edgesample_ids'),
    source_namespace varchar(63) NOT NULL,
    source_workload varchar(253) NOT NULL,
    target_namespace varchar(63) NOT NULL,
    target_workload varchar(253) NOT NULL,
    ts timestamptz NOT NULL,
    source varchar(16) NOT NULL,
    requests double precision NULL,
    error_ratio double precision NULL,
    request_bytes double precision NULL,
    response_bytes double precision NULL,
    p50 double precision NULL,
    p99 double precision NULL,
    CONSTRAINT traffic_edgesample_pkey PRIMARY KEY (id, ts),
    CONSTRAINT edgesample_unique_point UNIQUE (ts, source, source_namespace, source_workload, target_namespace,
                                               target_workload),
    CONSTRAINT edgesample_rates_valid CHECK (
        (requests IS NULL OR requests >= 0) AND (request_bytes IS NULL OR request_bytes >= 0)
        AND (response_bytes IS NULL OR response_bytes >= 0)
        AND (error_ratio IS NULL OR (error_ratio >= 0 AND error_ratio <= 1)))
) PARTITION BY RANGE (ts);
ALTER SEQUENCE traffic_edgesample_ids OWNED BY traffic_edgesample.id;
CREATE INDEX edgesample_ts_brin ON traffic_edgesample USING brin (ts);
CREATE TABLE traffic_edgesample_default PARTITION OF traffic_edgesample DEFAULT;
"""


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("probes", "0006_pair_latest"),
    ]

    operations = [
        migrations.CreateModel(
            name='TrafficSource',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=16, unique=True)),
                ('enabled', models.BooleanField(default=True, help_text='Configured to be read (NETAWARE_TRAFFIC_SOURCES)')),
                ('present', models.BooleanField(default=False, help_text='Its metric had series at the last discovery')),
                ('series', models.PositiveIntegerField(default=0, help_text='Series of its presence metric')),
                ('checked_at', models.DateTimeField(blank=True, null=True)),
                ('rejected_last_run', models.PositiveIntegerField(default=0)),
                ('rejection_reasons', models.TextField(blank=True, help_text='Why series were refused in the last pull')),
                ('error', models.TextField(blank=True)),
            ],
        ),
        migrations.CreateModel(
            name='TrafficWatermark',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(max_length=32, unique=True)),
                ('last_end', models.DateTimeField()),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
        ),
        migrations.CreateModel(
            name='EdgeRollup',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('source_namespace', models.CharField(max_length=63)),
                ('source_workload', models.CharField(max_length=253)),
                ('target_namespace', models.CharField(max_length=63)),
                ('target_workload', models.CharField(max_length=253)),
                ('bucket', models.DateTimeField()),
                ('source', models.CharField(max_length=16)),
                ('count', models.PositiveIntegerField()),
                ('requests_mean', models.FloatField(blank=True, null=True)),
                ('requests_max', models.FloatField(blank=True, null=True)),
                ('request_bytes_mean', models.FloatField(blank=True, null=True)),
                ('response_bytes_mean', models.FloatField(blank=True, null=True)),
                ('p50_mean', models.FloatField(blank=True, null=True)),
                ('p99_max', models.FloatField(blank=True, null=True)),
                ('error_ratio_mean', models.FloatField(blank=True, null=True)),
            ],
            options={
                'indexes': [django.contrib.postgres.indexes.BrinIndex(fields=['bucket'], name='edgerollup_bucket_brin')],
                'constraints': [models.UniqueConstraint(fields=('bucket', 'source', 'source_namespace', 'source_workload', 'target_namespace', 'target_workload'), name='edgerollup_unique')],
            },
        ),
        # The raw table is range-partitioned by ts (one partition per UTC hour, made by
        # probes.services.ensure_partitions; a DEFAULT partition catches the rest), like the probe samples.
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(EDGE_SAMPLE_SQL, reverse_sql='DROP TABLE traffic_edgesample CASCADE; DROP SEQUENCE IF EXISTS traffic_edgesample_ids;')],
            state_operations=[
                migrations.CreateModel(
                    name='EdgeSample',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('source_namespace', models.CharField(max_length=63)),
                        ('source_workload', models.CharField(max_length=253)),
                        ('target_namespace', models.CharField(max_length=63)),
                        ('target_workload', models.CharField(max_length=253)),
                        ('ts', models.DateTimeField(help_text='End of the aligned pull window')),
                        ('source', models.CharField(help_text='Traffic source (adapter): istio, linkerd, otel, hubble', max_length=16)),
                        ('requests', models.FloatField(blank=True, help_text='requests/s', null=True)),
                        ('error_ratio', models.FloatField(blank=True, help_text='failed / all requests, 0..1', null=True)),
                        ('request_bytes', models.FloatField(blank=True, help_text='bytes/s caller -> callee', null=True)),
                        ('response_bytes', models.FloatField(blank=True, help_text='bytes/s callee -> caller', null=True)),
                        ('p50', models.FloatField(blank=True, help_text='median call duration, seconds', null=True)),
                        ('p99', models.FloatField(blank=True, help_text='99th percentile call duration, seconds', null=True)),
                    ],
                    options={
                        'indexes': [django.contrib.postgres.indexes.BrinIndex(fields=['ts'], name='edgesample_ts_brin')],
                        'constraints': [models.UniqueConstraint(fields=('ts', 'source', 'source_namespace', 'source_workload', 'target_namespace', 'target_workload'), name='edgesample_unique_point'), models.CheckConstraint(condition=models.Q(models.Q(('requests__isnull', True), ('requests__gte', 0), _connector='OR'), models.Q(('request_bytes__isnull', True), ('request_bytes__gte', 0), _connector='OR'), models.Q(('response_bytes__isnull', True), ('response_bytes__gte', 0), _connector='OR'), models.Q(('error_ratio__isnull', True), models.Q(('error_ratio__gte', 0), ('error_ratio__lte', 1)), _connector='OR')), name='edgesample_rates_valid')],
                    },
                ),
            ],
        ),
        migrations.CreateModel(
            name='LearnedEdge',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('source_namespace', models.CharField(max_length=63)),
                ('source_workload', models.CharField(max_length=253)),
                ('target_namespace', models.CharField(max_length=63)),
                ('target_workload', models.CharField(max_length=253)),
                ('source', models.CharField(max_length=16)),
                ('requests', models.FloatField()),
                ('error_ratio', models.FloatField(blank=True, null=True)),
                ('request_bytes', models.FloatField()),
                ('response_bytes', models.FloatField()),
                ('p50', models.FloatField(blank=True, null=True)),
                ('p99', models.FloatField(blank=True, null=True)),
                ('first_seen', models.DateTimeField()),
                ('last_seen', models.DateTimeField()),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('source_namespace', 'source_workload', 'target_namespace', 'target_workload'), name='learnededge_unique')],
            },
        ),
        migrations.CreateModel(
            name='LearningMode',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('namespace', models.CharField(max_length=63)),
                ('application', models.CharField(blank=True, help_text='Empty: the whole namespace', max_length=253)),
                ('mode', models.CharField(choices=[('suggest', 'suggest (shown beside the declared AppGroup with a diff; nothing steers)'), ('adopt', 'adopt (created/updated with origin observed; steers scheduling)'), ('off', 'off (not learned)')], default='suggest', max_length=16)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'ordering': ('namespace', 'application'),
                'constraints': [models.UniqueConstraint(fields=('namespace', 'application'), name='learningmode_unique'), models.CheckConstraint(condition=models.Q(('mode__in', ['suggest', 'adopt', 'off'])), name='learningmode_mode_valid')],
            },
        ),
        migrations.CreateModel(
            name='ObservedAppGroup',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('namespace', models.CharField(max_length=63)),
                ('name', models.CharField(max_length=253)),
                ('document', models.JSONField(help_text='The observed AppGroup document (origin observed)')),
                ('edges', models.JSONField(default=list, help_text='[{source, target, requests, request_bytes, ...}]')),
                ('declared', models.CharField(blank=True, help_text='The declared AppGroup compared with', max_length=253)),
                ('diff', models.JSONField(default=dict)),
                ('hot_missing', models.PositiveIntegerField(default=0, help_text='Hot edges the declared AppGroup misses')),
                ('mode', models.CharField(choices=[('suggest', 'suggest (shown beside the declared AppGroup with a diff; nothing steers)'), ('adopt', 'adopt (created/updated with origin observed; steers scheduling)'), ('off', 'off (not learned)')], default='suggest', max_length=16)),
                ('adopted_hash', models.CharField(blank=True, help_text='spec hash last adopted', max_length=64)),
                ('adopt_error', models.TextField(blank=True)),
                ('learned_at', models.DateTimeField(help_text='End of the newest window learned from')),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'ordering': ('namespace', 'name'),
                'constraints': [models.UniqueConstraint(fields=('namespace', 'name'), name='observedappgroup_unique'), models.CheckConstraint(condition=models.Q(('mode__in', ['suggest', 'adopt', 'off'])), name='observedappgroup_mode_valid')],
            },
        ),
    ]
