"""The SQL models as package data: `harnessforge.analytics.sqlmodels` reads the `*.sql` files beside
this module through `importlib.resources`, so they ship inside the wheel (see `dbt_like_sql/README.md`)."""
