{{ config(materialized='view') }}
select id as customer_id, name, country from {{ ref('customers') }}
