"""The warehouse, without Dagster: the day's work one function per asset (day_work), the DuckDB
tables (store), the published files for agents (publish), the code version (version) and the
days a data folder holds (days). Dagster's assets (assets/) are thin loops over these; the
certification rebuild runs them directly."""
