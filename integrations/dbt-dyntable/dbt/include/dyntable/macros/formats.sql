{#-- dyntable tables are the default: a model without file_format is created USING dyntable.
     Any other file_format is one of Spark's own tables, which the server passes to Spark. --#}

{% macro dyntable_formats() -%}
  {{ return(['dyntable', 'paimon']) }}
{%- endmacro %}

{#-- Formats whose tables MERGE INTO can change: dyntable's, and dbt-spark's own list. --#}
{% macro dyntable_mergeable_formats() -%}
  {{ return(dyntable_formats() + ['delta', 'iceberg', 'hudi']) }}
{%- endmacro %}

{% macro dyntable_file_format() -%}
  {{ return(config.get('file_format') or 'dyntable') }}
{%- endmacro %}

{% macro dyntable__file_format_clause() %}
  using {{ dyntable_file_format() }}
{%- endmacro %}

{#-- dbt-spark's incremental materialization validates the format and the strategy with these two
     macros (not dispatched): the plugin's macros take precedence over dbt-spark's of the same name. --#}
{% macro dbt_spark_validate_get_file_format(raw_file_format) %}
  {%- set file_format = dyntable_file_format() -%}
  {%- set accepted = dyntable_formats() + ['text', 'csv', 'json', 'jdbc', 'parquet', 'orc', 'hive', 'delta', 'iceberg', 'libsvm', 'hudi'] -%}
  {%- if file_format not in accepted -%}
    {%- do exceptions.raise_compiler_error(
        "Invalid file format provided: " ~ file_format ~ "\nExpected one of: " ~ accepted | join(', ')) -%}
  {%- endif -%}
  {% do return(file_format) %}
{% endmacro %}

{% macro dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format) %}
  {%- set strategies = ['append', 'merge', 'insert_overwrite', 'microbatch'] -%}
  {%- if raw_strategy not in strategies -%}
    {%- do exceptions.raise_compiler_error(
        "Invalid incremental strategy provided: " ~ raw_strategy ~ "\nExpected one of: " ~ strategies | join(', ')) -%}
  {%- endif -%}
  {%- if raw_strategy == 'merge' and file_format not in dyntable_mergeable_formats() -%}
    {%- do exceptions.raise_compiler_error(
        "Invalid incremental strategy provided: merge\nmerge needs a table MERGE INTO can change:"
        ~ " file_format 'dyntable' (the default), 'paimon', 'delta', 'iceberg' or 'hudi'; this model has '"
        ~ file_format ~ "'") -%}
  {%- endif -%}
  {%- if raw_strategy in ['insert_overwrite', 'microbatch'] and target.endpoint -%}
    {%- do exceptions.raise_compiler_error(
        "Invalid incremental strategy provided: " ~ raw_strategy ~ "\nYou cannot use this strategy when connecting via endpoint") -%}
  {%- endif -%}
  {% do return(raw_strategy) %}
{% endmacro %}
