"""Benchmark machinery: episode running, scoring, Bradley–Terry ELO with task bootstrap, reports."""
