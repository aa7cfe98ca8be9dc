{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id',
          tblproperties={'primary-key': 'id'}) }}
-- the same merge into a primary-key table
{% if is_incremental() %}
select id, customer_id, amount + 100 as amount from {{ ref('orders') }} where id >= 4
union all
select 6 as id, 1 as customer_id, 1.00 as amount
{% else %}
select id, customer_id, amount from {{ ref('orders') }}
{% endif %}
