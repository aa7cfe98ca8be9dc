{{ config(materialized='incremental', incremental_strategy='insert_overwrite', partition_by=['order_date']) }}
-- the second run rewrites the latest day only (amounts x10); the other days stay as they are
select id, amount{% if is_incremental() %} * 10{% endif %} as amount, order_date
from {{ ref('orders') }}
{% if is_incremental() %}
where order_date = (select max(order_date) from {{ this }})
{% endif %}
