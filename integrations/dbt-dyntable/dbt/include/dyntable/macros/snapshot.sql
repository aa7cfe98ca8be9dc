{#-- Snapshots on dyntable tables. dbt-spark's snapshot materialization refuses any table that is
     not delta, iceberg or hudi before it starts; this one runs the same steps (dbt-spark's staging
     view, column additions and MERGE) on a dyntable table, which MERGE INTO updates in place. --#}

{% materialization snapshot, adapter='dyntable' %}
  {%- set target_table = model.get('alias', model.get('name')) -%}
  {%- set strategy_name = config.get('strategy') -%}
  {%- set file_format = dyntable_file_format() -%}
  {%- set grant_config = config.get('grants') -%}

  {%- if file_format not in dyntable_mergeable_formats() -%}
    {%- do exceptions.raise_compiler_error(
        "Invalid file format: " ~ file_format ~ "\nA snapshot is kept up to date with MERGE INTO: use"
        ~ " file_format 'dyntable' (the default), 'paimon', 'delta', 'iceberg' or 'hudi'") -%}
  {%- endif -%}

  {% set target_relation_exists, target_relation = get_or_create_relation(
        database=none, schema=model.schema, identifier=target_table, type='table') -%}

  {%- if target_relation_exists and not (target_relation.is_dyntable or target_relation.is_delta
                                         or target_relation.is_iceberg or target_relation.is_hudi) -%}
    {%- do exceptions.raise_compiler_error(
        "The existing table " ~ model.schema ~ "." ~ target_table ~ " is not a dyntable (or delta,"
        ~ " iceberg, hudi) table, so MERGE INTO cannot update it: drop it, or snapshot into another name") -%}
  {%- endif -%}

  {% if not adapter.check_schema_exists(model.database, model.schema) %}
    {% do create_schema(model.schema) %}
  {% endif %}

  {%- if not target_relation.is_table -%}
    {% do exceptions.relation_wrong_type(target_relation, 'table') %}
  {%- endif -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {% set strategy_macro = strategy_dispatch(strategy_name) %}
  {% set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], target_relation_exists) %}

  {% if not target_relation_exists %}
    {% set build_sql = build_snapshot_table(strategy, model['compiled_code']) %}
    {% set final_sql = create_table_as(False, target_relation, build_sql) %}
  {% else %}
    {% set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() %}
    {{ adapter.valid_snapshot_target(target_relation, columns) }}

    {% set staging_table = spark_build_snapshot_staging_table(strategy, sql, target_relation) %}
    {% do adapter.expand_target_column_types(from_relation=staging_table, to_relation=target_relation) %}

    {#-- the staging view's bookkeeping columns never become columns of the snapshot --#}
    {% set internal = ['dbt_change_type', 'dbt_unique_key'] %}
    {% set missing_columns = [] %}
    {% for column in adapter.get_missing_columns(staging_table, target_relation) %}
      {% if column.name | lower not in internal %}{% do missing_columns.append(column) %}{% endif %}
    {% endfor %}
    {% do create_columns(target_relation, missing_columns) %}

    {% set quoted_source_columns = [] %}
    {% for column in adapter.get_columns_in_relation(staging_table) %}
      {% if column.name | lower not in internal %}
        {% do quoted_source_columns.append(adapter.quote(column.name)) %}
      {% endif %}
    {% endfor %}

    {% set final_sql = snapshot_merge_sql(
        target=target_relation, source=staging_table, insert_cols=quoted_source_columns) %}
  {% endif %}

  {% call statement('main') %}
    {{ final_sql }}
  {% endcall %}

  {% set should_revoke = should_revoke(target_relation_exists, full_refresh_mode) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}
  {% do persist_docs(target_relation, model) %}

  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}

  {% if staging_table is defined %}
    {% do post_snapshot(staging_table) %}
  {% endif %}

  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
