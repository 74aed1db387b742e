"""Analyse: statistics of the run and window records, the summary, effects of factors, the cost model,
drift, latency and load summaries, and the plain conclusion."""
