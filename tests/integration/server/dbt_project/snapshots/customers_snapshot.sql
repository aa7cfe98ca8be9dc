{% snapshot customers_snapshot %}
{{ config(unique_key='id', strategy='check', check_cols=['name', 'country']) }}
select id, name, country from {{ ref('customers') }}
{% endsnapshot %}
