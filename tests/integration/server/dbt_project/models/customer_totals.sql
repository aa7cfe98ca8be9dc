select c.customer_id, c.name, count(o.id) as order_count, sum(o.amount) as total_amount
from {{ ref('stg_customers') }} c
left join {{ ref('orders') }} o on o.customer_id = c.customer_id
group by c.customer_id, c.name
