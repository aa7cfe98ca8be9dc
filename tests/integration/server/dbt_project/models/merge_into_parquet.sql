{{ config(enabled=var('refusals', false), materialized='incremental', incremental_strategy='merge',
          unique_key='id', file_format='parquet') }}
-- built only with --vars '{refusals: true}': a merge into one of Spark's own parquet tables is
-- refused before any statement runs, with a message naming the formats that can merge
select id from {{ ref('orders') }}
