"""Routines: mined from the compiler's action streams (miner), priced as guarded replay plans
(plans) and replayed in a real browser (replay). Built on the compiler; no Dagster."""
