"""Maths: the statistics of repeated measurements and the power of the sweep's test, pure functions of
numbers. Below every stage: measure's adaptive stopping, the plan's detectable speedup and every analysis use
them; they import nothing of the package but each other."""
