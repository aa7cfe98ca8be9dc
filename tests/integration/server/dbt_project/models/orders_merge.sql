{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id') }}
{% if is_incremental() %}
-- orders 4 and 5 change, order 6 is new
select id, customer_id, amount + 100 as amount, 'second' as loaded_by from {{ ref('orders') }} where id >= 4
union all
select 6 as id, 1 as customer_id, 1.00 as amount, 'second' as loaded_by
{% else %}
select id, customer_id, amount, 'first' as loaded_by from {{ ref('orders') }}
{% endif %}
